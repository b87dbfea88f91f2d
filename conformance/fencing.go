package conformance

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/driver"
)

// fencer returns d as a Fencer, skipping the subtest when d is not one.
func (e *env) fencer(d driver.Driver) driver.Fencer {
	e.t.Helper()
	f, ok := d.(driver.Fencer)
	if !ok {
		e.t.Skipf("%T does not implement driver.Fencer", d)
	}
	return f
}

// tryFenced is AcquireFenced that fails the subtest on an error.
func (e *env) tryFenced(f driver.Fencer, key, owner string, ttl time.Duration) (uint64, bool) {
	e.t.Helper()
	token, ok, err := f.AcquireFenced(e.ctx, key, owner, ttl)
	if err != nil {
		e.t.Fatalf("AcquireFenced(%s, %s, %v): unexpected error: %v", show(key), owner, ttl, err)
	}
	if ok && token == 0 {
		e.t.Fatalf("AcquireFenced(%s, %s, %v) succeeded with token 0; tokens are never 0", show(key), owner, ttl)
	}
	return token, ok
}

// fenced takes a free key with AcquireFenced and returns its token.
func (e *env) fenced(f driver.Fencer, key, owner string, ttl time.Duration) uint64 {
	e.t.Helper()
	token, ok := e.tryFenced(f, key, owner, ttl)
	if !ok {
		e.t.Fatalf("AcquireFenced(%s, %s, %v) on a free key = false, want true", show(key), owner, ttl)
	}
	return token
}

// testFencing checks that fencing tokens only increase per key, whatever
// ended the previous acquisition and whichever instance minted them.
func testFencing(e *env) {
	a, b := e.open(), e.open()
	fa, fb := e.fencer(a), e.fencer(b)
	increased := func(e *env, key, after string, prev, next uint64) {
		e.t.Helper()
		if next <= prev {
			e.t.Errorf("token for %s after %s = %d, previous acquisition's = %d: tokens must strictly increase per key", show(key), after, next, prev)
		}
	}
	e.sub("NeverZero", func(e *env) {
		for _, name := range []string{"one", "two", "three"} {
			key, owner := e.key(name), newOwner()
			e.fenced(fa, key, owner, hold) // fails on token 0
			e.release(a, key, owner)
		}
	})
	e.sub("AcrossRelease", func(e *env) {
		key, first, second, third := e.key("released"), newOwner(), newOwner(), newOwner()
		t1 := e.fenced(fa, key, first, hold)
		e.release(a, key, first)
		t2 := e.fenced(fb, key, second, hold)
		increased(e, key, "Release, on another instance", t1, t2)
		e.release(b, key, second)
		t3 := e.fenced(fa, key, third, hold)
		increased(e, key, "Release, back on the first instance", t2, t3)
		e.release(a, key, third)
	})
	e.sub("AcrossExpiry", func(e *env) {
		const ttl = 10 * time.Millisecond
		key, first, second := e.key("expired"), newOwner(), newOwner()
		sent := time.Now()
		t1 := e.fenced(fa, key, first, ttl)
		deadline := time.Now().Add(ttl + e.slack)
		e.sleepUntil(sent.Add(ttl))
		var t2 uint64
		if !e.pollUntil(deadline, func() bool {
			var ok bool
			t2, ok = e.tryFenced(fb, key, second, hold)
			return ok
		}) {
			e.t.Fatalf("AcquireFenced(%s) still failing after TTL %v + ExpirySlack %v: the lock did not expire", show(key), ttl, e.slack)
		}
		increased(e, key, "expiry", t1, t2)
		e.release(b, key, second)
	})
	e.sub("AcrossForceRelease", func(e *env) {
		key, first, second := e.key("forced"), newOwner(), newOwner()
		t1 := e.fenced(fa, key, first, hold)
		e.forceRelease(b, key)
		t2 := e.fenced(fb, key, second, hold)
		increased(e, key, "ForceRelease", t1, t2)
		e.release(b, key, second)
	})
	e.sub("Concurrent", func(e *env) {
		testConcurrentTokens(e, []driver.Driver{a, b, e.open()})
	})
}

// testConcurrentTokens has goroutines on several instances take one key in
// turn, each noting its token while it holds the key, so the notes are in
// acquisition order and must strictly increase.
func testConcurrentTokens(e *env, instances []driver.Driver) {
	const (
		workers  = 6
		attempts = 100
		budget   = 500 * time.Millisecond
	)
	key := e.key("concurrent")
	var (
		mu      sync.Mutex
		tokens  []uint64
		failed  atomic.Bool
		reports = newReporter(e)
		wg      sync.WaitGroup
	)
	fencers := make([]driver.Fencer, len(instances))
	for i, d := range instances {
		fencers[i] = e.fencer(d)
	}
	stop := time.Now().Add(budget)
	for w := range workers {
		d, f := instances[w%len(instances)], fencers[w%len(instances)]
		wg.Go(func() {
			for range attempts {
				if time.Now().After(stop) || failed.Load() {
					return
				}
				owner := newOwner()
				token, ok, err := f.AcquireFenced(e.ctx, key, owner, hold)
				if err != nil {
					reports.add("error", "AcquireFenced(%s) under contention: unexpected error: %v", show(key), err)
					failed.Store(true)
					return
				}
				if !ok {
					continue
				}
				mu.Lock()
				tokens = append(tokens, token)
				mu.Unlock()
				if released, err := d.Release(e.ctx, key, owner); err != nil || !released {
					reports.add("release", "Release(%s) by the holder under contention = %v, %v; want true, nil", show(key), released, err)
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	reports.flush()
	if len(tokens) == 0 {
		e.t.Fatalf("no AcquireFenced of %s succeeded under contention", show(key))
	}
	for i := 1; i < len(tokens); i++ {
		if tokens[i] <= tokens[i-1] {
			e.t.Errorf("acquisition #%d of %s got token %d after acquisition #%d got %d: concurrent acquirers' tokens must be distinct and increase in acquisition order",
				i+1, show(key), tokens[i], i, tokens[i-1])
			return
		}
	}
	e.t.Logf("%d acquisitions with strictly increasing tokens", len(tokens))
}
