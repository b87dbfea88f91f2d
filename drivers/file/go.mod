module github.com/zerotal/lock/drivers/file

go 1.26.0

require (
	github.com/zerotal/lock/conformance v0.1.0
	github.com/zerotal/lock/driver v0.1.0
	github.com/zerotal/lock/sdk/go v0.1.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.50.0
)

require (
	github.com/anishathalye/porcupine v1.3.1 // indirect
	github.com/zerotal/lock/drivers/memory v0.1.0 // indirect
)
