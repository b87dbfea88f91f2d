module github.com/zerotal/lock/drivers/redis

go 1.26.0

require (
	github.com/redis/go-redis/v9 v9.23.0
	github.com/zerotal/lock/driver v0.1.0
	github.com/zerotal/lock/sdk/go v0.1.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/zerotal/lock/drivers/memory v0.1.0 // indirect
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/zerotal/lock/conformance v0.1.0
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)
