package conformance

import (
	"os"
	"time"

	"github.com/zerotal/lock/driver"
)

// clockTolerance is how far a backend's idea of acquisition and expiry times
// may stray from the test's: generous, for a server clock on another host or
// a loaded machine.
const clockTolerance = time.Second

// inspect is Inspect that fails the subtest on an error.
func (e *env) inspect(in driver.Inspector, key string) (driver.Holder, bool) {
	e.t.Helper()
	h, held, err := in.Inspect(e.ctx, key)
	if err != nil {
		e.t.Fatalf("Inspect(%s): unexpected error: %v", show(key), err)
	}
	return h, held
}

// testInspector checks that Inspect describes the live holder and agrees
// with Exists.
func testInspector(e *env) {
	a, b := e.open(), e.open()
	ia, ok := a.(driver.Inspector)
	if !ok {
		e.t.Skipf("%T does not implement driver.Inspector", a)
	}
	ib, ok := b.(driver.Inspector)
	if !ok {
		e.t.Fatalf("one instance from Harness.New implements driver.Inspector and another (%T) does not", b)
	}
	fa, fencer := a.(driver.Fencer)
	// within reports a non-zero time outside [from-tolerance, to+tolerance].
	within := func(e *env, what string, got, from, to time.Time) {
		e.t.Helper()
		if got.IsZero() {
			e.t.Logf("Holder.%s is zero (unknown)", what)
			return
		}
		if got.Before(from.Add(-clockTolerance)) || got.After(to.Add(clockTolerance)) {
			e.t.Errorf("Holder.%s = %v, want between %v and %v (give or take %v)",
				what, got.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano), to.Format(time.RFC3339Nano), clockTolerance)
		}
	}

	e.sub("Free", func(e *env) {
		key := e.key("never-taken")
		if h, held := e.inspect(ib, key); held {
			e.t.Errorf("Inspect(%s) on a key never taken = %+v, held; want not held", show(key), h)
		}
	})
	e.sub("Held", func(e *env) {
		key, owner := e.key("held"), newOwner()
		sent := time.Now()
		var token uint64
		if fencer {
			token = e.fenced(fa, key, owner, hold)
		} else {
			e.mustAcquire(a, key, owner, hold)
		}
		returned := time.Now()
		h, held := e.inspect(ib, key)
		if !held {
			e.t.Fatalf("Inspect(%s) on a held key: not held, want held", show(key))
		}
		if h.Owner != owner {
			e.t.Errorf("Holder.Owner = %q, want the acquiring owner %q", h.Owner, owner)
		}
		if h.Token != token {
			e.t.Errorf("Holder.Token = %d, want %d (the acquisition's token; 0 for a driver that is not a Fencer)", h.Token, token)
		}
		within(e, "AcquiredAt", h.AcquiredAt, sent, returned)
		within(e, "ExpiresAt", h.ExpiresAt, sent.Add(hold), returned.Add(hold))
		if h.PID != 0 && h.PID != os.Getpid() {
			e.t.Errorf("Holder.PID = %d, want 0 (unknown) or this process, %d", h.PID, os.Getpid())
		}
		if !e.exists(b, key) {
			e.t.Errorf("Exists(%s) = false while Inspect says it is held", show(key))
		}
		e.release(a, key, owner)
	})
	e.sub("Refreshed", func(e *env) {
		name, refresh := e.refresher(a)
		const longer = 2 * hold
		key, owner := e.key("refreshed"), newOwner()
		e.mustAcquire(a, key, owner, hold)
		sent := time.Now()
		if !refresh(key, owner, longer) {
			e.t.Fatalf("%s(%s) by the holder = false, want true", name, show(key))
		}
		returned := time.Now()
		if h, held := e.inspect(ib, key); !held {
			e.t.Errorf("Inspect(%s) after %s: not held, want held", show(key), name)
		} else {
			within(e, "ExpiresAt after "+name, h.ExpiresAt, sent.Add(longer), returned.Add(longer))
		}
		e.release(a, key, owner)
	})
	e.sub("Released", func(e *env) {
		key, owner := e.key("released"), newOwner()
		e.mustAcquire(a, key, owner, hold)
		e.release(a, key, owner)
		if h, held := e.inspect(ib, key); held {
			e.t.Errorf("Inspect(%s) after Release = %+v, held; want not held", show(key), h)
		}
		e.mustAcquire(a, key, owner, hold)
		e.forceRelease(b, key)
		if h, held := e.inspect(ia, key); held {
			e.t.Errorf("Inspect(%s) after ForceRelease = %+v, held; want not held", show(key), h)
		}
	})
	e.sub("Expired", func(e *env) {
		const ttl = 20 * time.Millisecond
		key := e.key("expired")
		sent := time.Now()
		e.mustAcquire(a, key, newOwner(), ttl)
		deadline := time.Now().Add(ttl + e.slack)
		e.sleepUntil(sent.Add(ttl))
		if !e.pollUntil(deadline, func() bool { _, held := e.inspect(ib, key); return !held }) {
			e.t.Errorf("Inspect(%s) still says held %v after it was taken with TTL %v (ExpirySlack %v): an expired lock is free",
				show(key), time.Since(sent).Round(time.Millisecond), ttl, e.slack)
		}
	})
}
