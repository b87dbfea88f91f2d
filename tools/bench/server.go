package main

import (
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"

	redisdriver "github.com/zerotal/lock/drivers/redis"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// server is a private redis-server on a free loopback port that keeps
// nothing on disk (the driver's test launcher), so that the benchmark owns
// every key and every counter of INFO commandstats.
type server struct {
	*redistest.Server
	dir string
}

// startServer starts bin (redis-server from PATH when empty) and waits until
// it answers PING.
func startServer(bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "zerotal-bench-redis-")
	if err != nil {
		return nil, err
	}
	s, err := redistest.StartBinary(bin, dir)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("%w; the benchmark starts a private server: install redis-server or name the binary with -redis-server", err)
	}
	return &server{Server: s, dir: dir}, nil
}

// stop kills the server and removes its directory.
func (s *server) stop() {
	s.Kill()
	_ = os.RemoveAll(s.dir)
}

func (s *server) addr() string { return s.Addr() }

// newClient returns a go-redis client on s with the options every library
// under test gets, counting the commands it sends into sent when sent is
// not nil.
func (s *server) newClient(sent *commandCounter) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr: s.addr(),
		// As drivers/redis.Open sets it: calls end at their ctx's
		// deadline. Every library gets the same client settings.
		ContextTimeoutEnabled: true,
	})
	if sent != nil {
		c.AddHook(sent)
	}
	return c
}

// openDriver returns the Redis driver on s as Open makes it (its own client,
// with the defaults users get), failing loudly: the URL is always valid.
func (s *server) openDriver() *redisdriver.Driver {
	d, err := redisdriver.Open("redis://" + s.addr())
	if err != nil {
		panic("bench: " + err.Error())
	}
	return d
}
