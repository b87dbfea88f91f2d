module github.com/zerotal/lock/locktest

go 1.26.0

require (
	github.com/zerotal/lock/driver v0.1.0
	github.com/zerotal/lock/drivers/memory v0.1.0
	github.com/zerotal/lock/sdk/go v0.1.0
	go.uber.org/goleak v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.6 // indirect
