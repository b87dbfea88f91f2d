package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// errNoRedisServer is returned when no redis-server binary can be found.
var errNoRedisServer = errors.New("redis-server not found: the benchmark starts a private server; " +
	"install it (Debian/Ubuntu: apt-get install redis-server) or name the binary with -redis-server")

// server is a private redis-server on a free loopback port that keeps
// nothing on disk, so that the benchmark owns every key and every counter
// of INFO commandstats.
type server struct {
	cmd    *exec.Cmd
	dir    string
	port   int
	exited chan struct{} // closed once cmd has been waited for
}

// startServer starts bin (redis-server from PATH when empty) and waits until
// it answers PING.
func startServer(bin string) (*server, error) {
	if bin == "" {
		found, err := exec.LookPath("redis-server")
		if err != nil {
			return nil, errNoRedisServer
		}
		bin = found
	} else if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("%w (%v)", errNoRedisServer, err)
	}
	dir, err := os.MkdirTemp("", "zerotal-bench-redis-")
	if err != nil {
		return nil, err
	}
	var lastErr error
	// A port found free can be taken before redis-server binds it.
	for range 5 {
		port, err := freePort()
		if err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		s := &server{dir: dir, port: port}
		if lastErr = s.launch(bin); lastErr == nil {
			return s, nil
		}
	}
	_ = os.RemoveAll(dir)
	return nil, fmt.Errorf("starting %s: %w", bin, lastErr)
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts the server on s.port and waits for its PING.
func (s *server) launch(bin string) error {
	log := filepath.Join(s.dir, "redis.log")
	cmd := exec.Command(bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", log,
		"--daemonize", "no",
	)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	c := redis.NewClient(&redis.Options{Addr: s.addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(log)
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, out)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server on port %d did not answer PING: %w", s.port, err)
		}
	}
}

// kill stops the server with SIGKILL and waits for it.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// stop kills the server and removes its directory.
func (s *server) stop() {
	s.kill()
	_ = os.RemoveAll(s.dir)
}

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

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
