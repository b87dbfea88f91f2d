package redis

import (
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

// blockBound is how late past its timeout a Block may return on a loaded
// machine; what is tested is that it does not wait for the driver's own
// timeouts (2s leaves, 3s reads, dial retries).
const blockBound = 700 * time.Millisecond

func TestBlockReturnsAtItsDeadlineWhenTheServerNeverAnswers(t *testing.T) {
	s := startServer(t)
	p := startProxy(t, s.addr())
	d, err := Open("redis://" + p.addr())
	if err != nil {
		t.Fatal(err)
	}
	m := lock.New(d, lock.WithPrefix("t:"))
	defer m.Close()
	defer p.close() // before Close, which would wait for the stalled leave
	p.setMode(stallScripts)
	const timeout = 100 * time.Millisecond
	start := time.Now()
	err = m.Make(testKey(t, "stalled"), time.Minute).Block(t.Context(), lock.WithTimeout(timeout))
	if took := time.Since(start); took > timeout+blockBound {
		t.Fatalf("Block(timeout %v) on a server that never answers returned after %v", timeout, took)
	}
	var de *lock.DriverError
	if !errors.As(err, &de) || errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Block = %v; want a *DriverError: a server that never answers is not contention", err)
	}
}

func TestBlockWithTheServerDownIsAnOutageNotContention(t *testing.T) {
	// A port nobody listens on: every dial is refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	d, err := Open("redis://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	m := lock.New(d, lock.WithPrefix("t:"))
	defer m.Close()
	const timeout = time.Second
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		err := m.Make("k", time.Minute).Block(t.Context(), lock.WithTimeout(timeout))
		if took := time.Since(start); took > timeout+blockBound {
			t.Fatalf("Block(timeout %v) with the server down returned after %v", timeout, took)
		}
		var de *lock.DriverError
		if !errors.As(err, &de) || errors.Is(err, lock.ErrNotAcquired) || lock.CodeOf(err) != lock.CodeDriver {
			t.Fatalf("Block = %v (code %v); want a *DriverError", err, lock.CodeOf(err))
		}
	})
	t.Run("ctx deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), timeout)
		defer cancel()
		err := m.Make("k", time.Minute).Block(ctx, lock.WithTimeout(time.Minute))
		if lock.CodeOf(err) != lock.CodeDriver || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("Block = %v (code %v); want the refused connection as a *DriverError, not a bare deadline", err, lock.CodeOf(err))
		}
	})
}
