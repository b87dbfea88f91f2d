package main

// The drivers lockctl opens by name and by URL: every driver of the
// repository, so that one binary reaches any backend.
import (
	_ "github.com/zerotal/lock/drivers/etcd"
	_ "github.com/zerotal/lock/drivers/file"
	_ "github.com/zerotal/lock/drivers/postgres"
	_ "github.com/zerotal/lock/drivers/redis"
	_ "github.com/zerotal/lock/drivers/sqlite"
)
