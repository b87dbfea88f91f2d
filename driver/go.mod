module github.com/zerotal/lock/driver

go 1.26
