package redis

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// server is a private redis-server (redistest) with the helpers the tests
// use.
type server struct{ *redistest.Server }

// startServer starts a private redis-server for t, stopped at cleanup.
// extra are more redis-server arguments.
func startServer(t testing.TB, extra ...string) *server {
	t.Helper()
	return &server{redistest.StartT(t, extra...)}
}

// restart kills the server and starts a new one, with no data, on the same
// port.
func (s *server) restart(t testing.TB) {
	t.Helper()
	if err := s.Restart(); err != nil {
		t.Fatalf("restarting redis-server: %v", err)
	}
}

func (s *server) addr() string { return s.Addr() }

func (s *server) url() string { return s.URL() }

// client returns a plain go-redis client on s, closed at cleanup, for tests to
// look at the server directly.
func (s *server) client(t testing.TB) *goredis.Client {
	t.Helper()
	c := s.Client()
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
