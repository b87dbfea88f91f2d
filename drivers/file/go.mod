module github.com/zerotal/lock/drivers/file

go 1.26.0

require github.com/zerotal/lock/core v0.0.0

require (
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
)

replace github.com/zerotal/lock/core => ../../core
