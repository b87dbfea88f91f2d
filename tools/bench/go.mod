module github.com/zerotal/lock/tools/bench

go 1.26.0

require (
	github.com/bsm/redislock v0.9.4
	github.com/go-redsync/redsync/v4 v4.18.1
	github.com/redis/go-redis/v9 v9.23.0
	github.com/redis/rueidis v1.0.79
	github.com/zerotal/lock/drivers/redis v0.1.0
	github.com/zerotal/lock/sdk/go v0.1.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/zerotal/lock/conformance v0.1.0 // indirect
	github.com/zerotal/lock/driver v0.1.0 // indirect
	github.com/zerotal/lock/drivers/memory v0.1.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
