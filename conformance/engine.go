package conformance

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
	lock "github.com/zerotal/lock/sdk/go"
)

// engineHold is the TTL of the locks the engine checks take: long enough
// that a key left held by nobody is still held when the check looks for it.
const engineHold = time.Minute

// engineRounds bounds the rounds of the checks that race one event against
// another: enough to hit the window on a driver that has one, few enough to
// stay within a few seconds on a networked backend.
const engineRounds = 40

// manager returns an engine on a fresh driver instance, with no key
// prefix, closed at cleanup.
func (e *env) manager() *lock.Manager {
	e.t.Helper()
	m := lock.New(e.open(), lock.WithPrefix(""))
	e.t.Cleanup(func() { _ = m.Close() })
	return m
}

// mustBeFree fails the subtest unless key is free, or frees within the
// expiry slack plus a second, by the driver d: what the engine gives back
// in the background has that long to arrive. A key held by nobody would
// stay held for engineHold.
func (e *env) mustBeFree(d driver.Driver, key, what string) {
	e.t.Helper()
	if !e.pollUntil(time.Now().Add(e.slack+time.Second), func() bool {
		return !e.exists(d, key)
	}) {
		e.t.Fatalf("%s: %s is still held, by an owner nobody knows, until its %v TTL", what, show(key), engineHold)
	}
}

// testEngine checks, through the engine (package lock), what every driver must make
// possible for it: a cancelled acquire holds nothing, a Block returns at its
// timeout, Close leaves nothing it was granted held, and Release after Close
// does nothing.
func testEngine(e *env) {
	e.sub("CancelledAcquireHoldsNothing", func(e *env) {
		// A cancellation can land after the backend granted the key but
		// before the answer arrived: the engine must give such a key back.
		m, probe := e.manager(), e.open()
		key := e.key("cancelled")
		for i := range engineRounds {
			ctx, cancel := context.WithCancel(e.ctx)
			stop := time.AfterFunc(time.Duration(rand.N(200*(i%8+1)))*time.Microsecond, cancel)
			l := m.Make(key, engineHold)
			ok, err := l.Acquire(ctx)
			stop.Stop()
			cancel()
			switch {
			case ok:
				if err := l.Release(e.ctx); err != nil {
					e.t.Fatalf("Release after an acquire that succeeded: %v", err)
				}
			case err != nil && !errors.Is(err, context.Canceled) && lock.CodeOf(err) != lock.CodeCanceled:
				e.t.Fatalf("Acquire with a cancelled ctx = %v; want success, or the ctx's error", err)
			}
			e.mustBeFree(probe, key, "after an acquire that was cancelled")
		}
	})
	e.sub("CancelledBlockHoldsNothing", func(e *env) {
		// The same through Block (AcquireWait on a driver that queues):
		// the cancel lands on a free key's first try, or on a waiter as
		// the holder hands the key over to it.
		m, holder, probe := e.manager(), e.manager(), e.open()
		key := e.key("cancelled-block")
		for i := range engineRounds {
			var h *lock.ManagedLock
			if i%2 == 1 {
				// Block, not Acquire: a queue may still list the last
				// round's cancelled waiter for a moment.
				h = holder.Make(key, engineHold)
				if err := h.Block(e.ctx, lock.WithTimeout(engineHold)); err != nil {
					e.t.Fatalf("Block on a free key = %v", err)
				}
			}
			ctx, cancel := context.WithCancel(e.ctx)
			delay := time.Duration(rand.N(200*(i%8+1))) * time.Microsecond
			stop := time.AfterFunc(delay, func() {
				if h != nil {
					_ = h.Release(e.ctx)
				}
				cancel()
			})
			l := m.Make(key, engineHold)
			err := l.Block(ctx, lock.WithTimeout(engineHold))
			if !stop.Stop() {
				<-ctx.Done() // the release and the cancel have run
			} else if h != nil {
				_ = h.Release(e.ctx)
			}
			cancel()
			switch {
			case err == nil:
				if err := l.Release(e.ctx); err != nil {
					e.t.Fatalf("Release after a Block that succeeded: %v", err)
				}
			case !errors.Is(err, context.Canceled) && lock.CodeOf(err) != lock.CodeCanceled:
				e.t.Fatalf("Block with a cancelled ctx = %v; want success, or the ctx's error", err)
			}
			e.mustBeFree(probe, key, "after a Block that was cancelled")
		}
	})
	e.sub("BlockReturnsAtItsTimeout", func(e *env) {
		holder, waiter := e.manager(), e.manager()
		key := e.key("timeout")
		if ok, err := holder.Make(key, engineHold).Acquire(e.ctx); !ok || err != nil {
			e.t.Fatalf("Acquire of a free key = %v, %v", ok, err)
		}
		// A fresh manager: its Driver may connect before its first
		// answer, which a shorter timeout would report as an outage.
		const timeout = time.Second
		start := time.Now()
		err := waiter.Make(key, engineHold).Block(e.ctx, lock.WithTimeout(timeout))
		took := time.Since(start)
		var nae *lock.NotAcquiredError
		if !errors.As(err, &nae) {
			e.t.Fatalf("Block on a held key = %v; want a *NotAcquiredError", err)
		}
		if took > timeout+e.slack+time.Second {
			e.t.Fatalf("Block(timeout %v) returned after %v", timeout, took)
		}
	})
	e.sub("CloseLeavesNothingHeld", func(e *env) {
		// Close races a release that hands the key to the closing
		// manager's waiter: whatever the order, nothing stays held.
		key := e.key("closing")
		probe := e.open()
		for range engineRounds / 4 {
			holder := e.manager()
			closing := lock.New(e.open(), lock.WithPrefix(""))
			l := holder.Make(key, engineHold)
			if ok, err := l.Acquire(e.ctx); !ok || err != nil {
				e.t.Fatalf("Acquire of a free key = %v, %v", ok, err)
			}
			waiting := make(chan error, 1)
			go func() {
				waiting <- closing.Make(key, engineHold).Block(e.ctx, lock.WithTimeout(engineHold))
			}()
			e.sleepUntil(time.Now().Add(time.Duration(rand.N(5)) * time.Millisecond))
			var wg sync.WaitGroup
			wg.Add(2)
			go func() { defer wg.Done(); _ = l.Release(e.ctx) }()
			go func() { defer wg.Done(); _ = closing.Close() }()
			wg.Wait()
			if err := <-waiting; err != nil && !errors.Is(err, lock.ErrClosed) {
				e.t.Fatalf("Block of a manager closed while it waited = %v; want nil or ErrClosed", err)
			}
			e.mustBeFree(probe, key, "after Close raced a hand-off to its waiter")
		}
	})
	e.sub("ReleaseAfterCloseIsANoOp", func(e *env) {
		m := lock.New(e.open(), lock.WithPrefix(""))
		l := m.Make(e.key("released"), engineHold)
		if ok, err := l.Acquire(e.ctx); !ok || err != nil {
			e.t.Fatalf("Acquire of a free key = %v, %v", ok, err)
		}
		if err := m.Close(); err != nil {
			e.t.Fatalf("Close: %v", err)
		}
		if err := l.Release(e.ctx); err != nil {
			e.t.Fatalf("Release after Close = %v; want nil: Close released it", err)
		}
		e.mustBeFree(e.open(), e.key("released"), "after Close")
	})
}
