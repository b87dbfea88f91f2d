module github.com/zerotal/lock/drivers/file

go 1.26
