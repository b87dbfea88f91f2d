package main

// The drivers the C ABI opens by name and by URL: a host program cannot
// import Go packages, so the library links every driver of the repository.
import (
	_ "github.com/zerotal/lock/drivers/etcd"
	_ "github.com/zerotal/lock/drivers/file"
	_ "github.com/zerotal/lock/drivers/postgres"
	_ "github.com/zerotal/lock/drivers/redis"
	_ "github.com/zerotal/lock/drivers/sqlite"
)
