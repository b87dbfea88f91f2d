module github.com/zerotal/lock/conformance

go 1.26

require github.com/zerotal/lock/core v0.0.0

require github.com/anishathalye/porcupine v1.3.1

require go.uber.org/goleak v1.3.0 // indirect

replace github.com/zerotal/lock/core => ../core
