package redis

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"
)

// With the server down, a Driver made by Open fails its calls and writes
// nothing on stderr: go-redis's dial failures are silenced, since the
// error says what failed. SetGoRedisLogging(true) brings them back.
// (This test changes the process-wide logger; it restores the quiet one.)
func TestGoRedisIsQuietUnlessAskedToLog(t *testing.T) {
	down := "redis://" + closedAddr(t)
	for _, c := range []struct {
		name string
		log  bool
	}{{"default", false}, {"asked to log", true}} {
		t.Run(c.name, func(t *testing.T) {
			if c.log {
				SetGoRedisLogging(true)
				defer SetGoRedisLogging(false)
			}
			stderr := captureStderr(t, func() {
				d, err := Open(down)
				if err != nil {
					t.Fatal(err)
				}
				defer d.Close()
				ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				defer cancel()
				if _, err := d.Acquire(ctx, "k", newOwner(), time.Minute); err == nil {
					t.Error("Acquire with the server down succeeded")
				}
			})
			if logged := strings.Contains(stderr, "redis:"); logged != c.log {
				t.Errorf("go-redis wrote %q on stderr; want logging %v", stderr, c.log)
			}
		})
	}
}

// captureStderr runs fn with the process's stderr redirected and returns
// what was written to it.
func captureStderr(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	out := make(chan string)
	go func() {
		var b bytes.Buffer
		_, _ = io.Copy(&b, r)
		out <- b.String()
	}()
	fn()
	os.Stderr = saved
	_ = w.Close()
	return <-out
}

// closedAddr returns a loopback address nobody listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}
