module github.com/zerotal/lock/drivers/memory

go 1.26

require (
	github.com/zerotal/lock/core v0.0.0
	go.uber.org/goleak v1.3.0
)

replace github.com/zerotal/lock/core => ../../core
