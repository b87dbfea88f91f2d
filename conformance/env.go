package conformance

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

// Variables, not constants, only so that the kit's own tests can prove the
// watchdog fires without waiting for it.
var (
	// subtestTimeout bounds the context every driver call of one top-level
	// subtest runs under: a driver that honours ctx fails the subtest with
	// its ctx error instead of hanging.
	subtestTimeout = 30 * time.Second
	// hangGrace is how long after subtestTimeout the watchdog waits before it
	// declares a driver hung: one that ignores its context.
	hangGrace = 15 * time.Second
)

const (
	// pollEvery is the pause between two checks while waiting for a key to
	// free: short against millisecond TTLs, long enough not to flood a
	// networked backend.
	pollEvery = 2 * time.Millisecond
	// timingTries is how many times a timing-sensitive check runs, with a
	// doubled TTL each time, before a machine too slow to check it in time
	// fails the subtest.
	timingTries = 3
)

// suite is one Run: the harness and the settings derived from it.
type suite struct {
	h     Harness
	slack time.Duration
}

// env is what a subtest works with: its *testing.T, the context bounding its
// driver calls, and its own random key prefix, so that subtests, repeated
// runs and concurrent runs on one backend never share a key.
type env struct {
	t      *testing.T
	ctx    context.Context
	h      Harness
	slack  time.Duration
	prefix string
}

// run runs test as the subtest name of t, under a context that ends after
// subtestTimeout and a watchdog that crashes the test binary, with every
// goroutine's stack, if the subtest is still running hangGrace later.
// nettest's timeoutWrapper is the model: a hung driver must fail the run, not
// hang CI.
func (s *suite) run(t *testing.T, name string, test func(e *env)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), subtestTimeout)
		started := time.Now()
		watchdog := time.AfterFunc(subtestTimeout+hangGrace, func() {
			hung(t.Name(), time.Since(started))
		})
		// Cleanups run last-registered first: registered before the
		// harness's own, these keep the watchdog armed while it closes
		// its drivers.
		t.Cleanup(func() { watchdog.Stop() })
		t.Cleanup(cancel)
		test(&env{t: t, ctx: ctx, h: s.h, slack: s.slack, prefix: newPrefix()})
	})
}

// hung reports a subtest that outlived its context by hangGrace and ends the
// process: a goroutine stuck in a driver call cannot be stopped, and
// returning from the subtest would leave it running against a finished test.
func hung(name string, after time.Duration) {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	fmt.Fprintf(os.Stderr, "conformance: %s still running after %v: a driver call ignores its context and hangs.\n\n%s\n",
		name, after.Round(time.Second), buf)
	panic("conformance: " + name + " hung in a driver call")
}

// sub runs test as a nested subtest with a fresh key prefix, under the same
// context and watchdog.
func (e *env) sub(name string, test func(e *env)) {
	e.t.Helper()
	e.t.Run(name, func(t *testing.T) {
		test(&env{t: t, ctx: e.ctx, h: e.h, slack: e.slack, prefix: newPrefix()})
	})
}

// newPrefix returns a key prefix no other subtest or run uses.
func newPrefix() string {
	var b [8]byte
	rand.Read(b[:]) // never fails since Go 1.24
	return "zlconf:" + hex.EncodeToString(b[:]) + ":"
}

// newOwner returns a fresh owner token in the form the engine uses: 32
// lowercase hex digits from crypto/rand.
func newOwner() string {
	var b [16]byte
	rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}

// key returns the subtest's key called name.
func (e *env) key(name string) string { return e.prefix + name }

// open returns a fresh driver instance from the harness.
func (e *env) open() driver.Driver {
	e.t.Helper()
	d := e.h.New(e.t)
	if d == nil {
		e.t.Fatal("Harness.New returned a nil driver")
	}
	return d
}

// show renders a key for a failure message: quoted, and cut short when long.
func show(key string) string {
	const limit = 72
	if len(key) <= limit {
		return fmt.Sprintf("%q", key)
	}
	return fmt.Sprintf("%q...(%d bytes)", key[:limit], len(key))
}

// acquire, release, forceRelease and exists call d and fail the subtest on
// an error: none of the kit's calls has a reason to fail.
func (e *env) acquire(d driver.Driver, key, owner string, ttl time.Duration) bool {
	e.t.Helper()
	ok, err := d.Acquire(e.ctx, key, owner, ttl)
	if err != nil {
		e.t.Fatalf("Acquire(%s, %s, %v): unexpected error: %v", show(key), owner, ttl, err)
	}
	return ok
}

func (e *env) release(d driver.Driver, key, owner string) bool {
	e.t.Helper()
	ok, err := d.Release(e.ctx, key, owner)
	if err != nil {
		e.t.Fatalf("Release(%s, %s): unexpected error: %v", show(key), owner, err)
	}
	return ok
}

func (e *env) forceRelease(d driver.Driver, key string) {
	e.t.Helper()
	if err := d.ForceRelease(e.ctx, key); err != nil {
		e.t.Fatalf("ForceRelease(%s): unexpected error: %v", show(key), err)
	}
}

func (e *env) exists(d driver.Driver, key string) bool {
	e.t.Helper()
	ok, err := d.Exists(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Exists(%s): unexpected error: %v", show(key), err)
	}
	return ok
}

// mustAcquire takes a free key and fails the subtest if it cannot.
func (e *env) mustAcquire(d driver.Driver, key, owner string, ttl time.Duration) {
	e.t.Helper()
	if !e.acquire(d, key, owner, ttl) {
		e.t.Fatalf("Acquire(%s, %s, %v) on a free key = false, want true", show(key), owner, ttl)
	}
}

// refresher returns the way the engine refreshes a lock on d: Extend when d
// is an Extender, otherwise Acquire by the same owner.
func (e *env) refresher(d driver.Driver) (name string, refresh func(key, owner string, ttl time.Duration) bool) {
	if x, ok := d.(driver.Extender); ok {
		return "Extend", func(key, owner string, ttl time.Duration) bool {
			e.t.Helper()
			ok, err := x.Extend(e.ctx, key, owner, ttl)
			if err != nil {
				e.t.Fatalf("Extend(%s, %s, %v): unexpected error: %v", show(key), owner, ttl, err)
			}
			return ok
		}
	}
	return "Acquire (the fallback for drivers without Extender)", func(key, owner string, ttl time.Duration) bool {
		e.t.Helper()
		return e.acquire(d, key, owner, ttl)
	}
}

// sleepUntil lets time pass until at, or until the subtest's context ends.
// It is for letting a TTL run out, never for synchronisation.
func (e *env) sleepUntil(at time.Time) {
	e.t.Helper()
	d := time.Until(at)
	if d <= 0 {
		return
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-e.ctx.Done():
		e.t.Fatalf("subtest context ended while waiting for a TTL to pass: %v", e.ctx.Err())
	}
}

// pollUntil calls check every pollEvery until it returns true, and reports
// whether it did in a call started no later than deadline. Calls that start
// before the deadline count even if they return after it: the backend may
// have answered at any moment in between.
func (e *env) pollUntil(deadline time.Time, check func() bool) bool {
	e.t.Helper()
	for {
		started := time.Now()
		if check() {
			return true
		}
		if started.After(deadline) {
			return false
		}
		e.sleepUntil(time.Now().Add(pollEvery))
	}
}

// timed runs check with ttl and, while check reports that the machine was too
// slow for its timing to prove anything (a non-empty reason), again with a
// doubled TTL, up to timingTries runs in all. check uses a fresh key per run.
func (e *env) timed(ttl time.Duration, check func(ttl time.Duration) (slow string)) {
	e.t.Helper()
	var slow string
	for range timingTries {
		if slow = check(ttl); slow == "" {
			return
		}
		e.t.Logf("inconclusive with TTL %v (%s); retrying with TTL %v", ttl, slow, 2*ttl)
		ttl *= 2
	}
	e.t.Errorf("inconclusive on all %d tries, up to TTL %v: %s; the machine is too loaded for this check's timing",
		timingTries, ttl/2, slow)
}

// late describes a check that finished after the moment until which its
// result was meaningful.
func late(finished, until time.Time) string {
	return fmt.Sprintf("the check finished %v after the TTL could have run out", finished.Sub(until).Round(time.Millisecond))
}
