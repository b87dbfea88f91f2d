package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// installHint is what a test says when it cannot find redis-server.
const installHint = "redis-server not found on PATH; these tests start a private server and never skip: " +
	"install it (Debian/Ubuntu package redis-server: apt-get install redis-server)"

// server is a private redis-server on a loopback port that keeps nothing on
// disk, so that tests can restart and kill it without touching anything
// shared.
type server struct {
	bin    string
	dir    string
	port   int
	extra  []string
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has been waited for
}

// startServer starts a private redis-server for t, stopped at cleanup.
// extra are more redis-server arguments.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(installHint)
	}
	s := &server{bin: bin, dir: t.TempDir(), extra: extra}
	t.Cleanup(s.stop)
	// A port found free can be taken before redis-server binds it.
	var lastErr error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		if lastErr = s.launch(); lastErr == nil {
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", lastErr)
	return nil
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

// launch starts redis-server on s.port and waits until it answers PING.
func (s *server) launch() error {
	args := append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--daemonize", "no",
	}, s.extra...)
	cmd := exec.Command(s.bin, args...)
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	s.cmd, s.exited = cmd, exited

	client := goredis.NewClient(&goredis.Options{Addr: s.addr(), MaxRetries: -1, DialTimeout: time.Second})
	defer client.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := client.Ping(ctx).Err()
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redis-server on port %d exited: %s", s.port, log)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.kill()
			return fmt.Errorf("redis-server on port %d did not answer PING: %w", s.port, err)
		}
	}
}

// kill stops the server with SIGKILL and waits for it to exit.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.exited
	s.cmd = nil
}

// restart kills the server and starts a new one, with no data, on the same
// port.
func (s *server) restart(t testing.TB) {
	t.Helper()
	s.kill()
	if err := s.launch(); err != nil {
		t.Fatalf("restarting redis-server: %v", err)
	}
}

func (s *server) stop() { s.kill() }

func (s *server) addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

func (s *server) url() string { return "redis://" + s.addr() }

// client returns a plain go-redis client on s, closed at cleanup, for tests to
// look at the server directly.
func (s *server) client(t testing.TB) *goredis.Client {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: s.addr()})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// open returns a Driver made by Open on s, closed at cleanup.
func (s *server) open(t testing.TB) *Driver {
	t.Helper()
	d, err := Open(s.url())
	if err != nil {
		t.Fatalf("Open(%q): %v", s.url(), err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// testKey returns a key under a random prefix, so that no two tests, and no
// two runs, share keys.
func testKey(t testing.TB, name string) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "zerotal_lock_test:" + hex.EncodeToString(b[:]) + ":" + name
}

// newOwner returns an owner token of the engine's shape: 32 lowercase hex
// digits.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// waitUntil polls cond every few milliseconds until it is true or timeout
// passes, and reports whether it became true.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends the
// goroutine, so that a test can check what startServer says when it fails.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestMissingRedisServerFailsWithInstallHint(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		startServer(rec)
		rec.msg = "startServer returned"
	}()
	<-done
	if !strings.Contains(rec.msg, "apt-get install redis-server") {
		t.Fatalf("startServer without redis-server on PATH said %q; want a failure naming the package to install", rec.msg)
	}
}

// cycle takes and releases key through d.
func cycle(t *testing.T, d *Driver, key string) {
	t.Helper()
	owner := newOwner()
	if ok, err := d.Acquire(t.Context(), key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire(%s) = %v, %v", key, ok, err)
	}
	if ok, err := d.Release(t.Context(), key, owner); err != nil || !ok {
		t.Fatalf("Release(%s) = %v, %v", key, ok, err)
	}
}
