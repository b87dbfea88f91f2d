module github.com/zerotal/lock/spec

go 1.26
