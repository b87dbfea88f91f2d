module github.com/zerotal/lock/sdk/go

go 1.26
