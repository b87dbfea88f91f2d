module github.com/zerotal/lock/core

go 1.26
