module github.com/zerotal/lock/tools/bench

go 1.26.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/zerotal/lock/drivers/redis v0.0.0
	github.com/zerotal/lock/sdk/go v0.0.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	github.com/zerotal/lock/core v0.0.0 // indirect
	github.com/zerotal/lock/drivers/file v0.0.0 // indirect
	github.com/zerotal/lock/drivers/memory v0.0.0 // indirect
	github.com/zerotal/lock/drivers/sqlite v0.0.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
	modernc.org/sqlite v1.62.0 // indirect
)

replace (
	github.com/zerotal/lock/core => ../../core
	github.com/zerotal/lock/drivers/file => ../../drivers/file
	github.com/zerotal/lock/drivers/memory => ../../drivers/memory
	github.com/zerotal/lock/drivers/redis => ../../drivers/redis
	github.com/zerotal/lock/drivers/sqlite => ../../drivers/sqlite
	github.com/zerotal/lock/sdk/go => ../../sdk/go
)
