package conformance

import "time"

// hold is the TTL for locks a subtest holds while it checks something else:
// long enough never to run out during the check, short enough that a lock a
// failed subtest leaves on a shared backend goes away soon.
const hold = 10 * time.Second

// testExists checks that Exists reports exactly the live locks.
func testExists(e *env) {
	a, b := e.open(), e.open()
	e.sub("NeverTaken", func(e *env) {
		key := e.key("never-taken")
		if e.exists(a, key) {
			e.t.Errorf("Exists(%s) on a key never taken = true, want false", show(key))
		}
	})
	e.sub("Held", func(e *env) {
		key, owner := e.key("held"), newOwner()
		e.mustAcquire(a, key, owner, hold)
		if !e.exists(a, key) {
			e.t.Errorf("Exists(%s) on the instance that holds it = false, want true", show(key))
		}
		if !e.exists(b, key) {
			e.t.Errorf("Exists(%s) on another instance of the same backend = false while the key is held, want true", show(key))
		}
		e.release(a, key, owner)
	})
	e.sub("Released", func(e *env) {
		key, owner := e.key("released"), newOwner()
		e.mustAcquire(a, key, owner, hold)
		if !e.release(a, key, owner) {
			e.t.Fatalf("Release(%s) by its holder = false, want true", show(key))
		}
		if e.exists(a, key) || e.exists(b, key) {
			e.t.Errorf("Exists(%s) after its holder released it = true, want false", show(key))
		}
	})
	e.sub("ForceReleased", func(e *env) {
		key := e.key("force-released")
		e.mustAcquire(a, key, newOwner(), hold)
		e.forceRelease(b, key)
		if e.exists(a, key) || e.exists(b, key) {
			e.t.Errorf("Exists(%s) after ForceRelease = true, want false", show(key))
		}
	})
	e.sub("Expired", func(e *env) {
		const ttl = 20 * time.Millisecond
		key := e.key("expired")
		sent := time.Now()
		e.mustAcquire(a, key, newOwner(), ttl)
		deadline := time.Now().Add(ttl + e.slack)
		e.sleepUntil(sent.Add(ttl))
		if !e.pollUntil(deadline, func() bool { return !e.exists(b, key) }) {
			e.t.Fatalf("Exists(%s) still true %v after it was taken with TTL %v (ExpirySlack %v), want false: an expired lock is not held",
				show(key), time.Since(sent).Round(time.Millisecond), ttl, e.slack)
		}
		if e.exists(a, key) {
			e.t.Errorf("Exists(%s) = true on the instance that took it, after another instance saw it expire", show(key))
		}
	})
}

// testOwnerGuard checks that only the holder's owner token releases a lock.
func testOwnerGuard(e *env) {
	a, b := e.open(), e.open()
	e.sub("NonOwnerRelease", func(e *env) {
		key, holder, other := e.key("guarded"), newOwner(), newOwner()
		e.mustAcquire(a, key, holder, hold)
		if e.release(b, key, other) {
			e.t.Errorf("Release(%s) by a non-owner on another instance = true, want false: release must be owner-guarded", show(key))
		}
		if e.release(a, key, other) {
			e.t.Errorf("Release(%s) by a non-owner on the holder's instance = true, want false: release must be owner-guarded", show(key))
		}
		if !e.exists(b, key) {
			e.t.Errorf("Exists(%s) = false after a non-owner's Release, want true: the holder lost its lock", show(key))
		}
		if !e.release(a, key, holder) {
			e.t.Errorf("Release(%s) by the holder after a non-owner's attempt = false, want true", show(key))
		}
	})
	e.sub("ReleaseTwice", func(e *env) {
		key, owner := e.key("twice"), newOwner()
		e.mustAcquire(a, key, owner, hold)
		if !e.release(a, key, owner) {
			e.t.Fatalf("Release(%s) by the holder = false, want true", show(key))
		}
		if e.release(a, key, owner) {
			e.t.Errorf("second Release(%s) by the same owner = true, want false: the key was already free", show(key))
		}
	})
	e.sub("FreeKey", func(e *env) {
		key := e.key("never-taken")
		if e.release(a, key, newOwner()) {
			e.t.Errorf("Release(%s) of a key never taken = true, want false", show(key))
		}
		if e.exists(b, key) {
			e.t.Errorf("Exists(%s) = true after Release of a key never taken, want false", show(key))
		}
	})
	e.sub("AfterExpiry", func(e *env) {
		// The classic unsafe unlock: a holder that outlived its TTL must
		// not free the lock its successor now holds.
		const ttl = 20 * time.Millisecond
		key, stale, next := e.key("expired-holder"), newOwner(), newOwner()
		sent := time.Now()
		e.mustAcquire(a, key, stale, ttl)
		deadline := time.Now().Add(ttl + e.slack)
		e.sleepUntil(sent.Add(ttl))
		if !e.pollUntil(deadline, func() bool { return e.acquire(b, key, next, hold) }) {
			e.t.Fatalf("instance B could not Acquire(%s) within TTL %v + ExpirySlack %v after A took it: the lock did not expire",
				show(key), ttl, e.slack)
		}
		if e.release(a, key, stale) {
			e.t.Errorf("Release(%s) by the expired holder = true after another owner took the key, want false: it freed its successor's lock", show(key))
		}
		if !e.exists(b, key) {
			e.t.Errorf("Exists(%s) = false after the expired holder's Release, want true: the successor lost its lock", show(key))
		}
		if !e.release(b, key, next) {
			e.t.Errorf("Release(%s) by the successor = false, want true", show(key))
		}
	})
}

// testForceRelease checks that ForceRelease frees a key whoever holds it and
// is harmless on a free key.
func testForceRelease(e *env) {
	a, b := e.open(), e.open()
	e.sub("FreesAnotherOwner", func(e *env) {
		key, holder, next := e.key("forced"), newOwner(), newOwner()
		e.mustAcquire(a, key, holder, hold)
		e.forceRelease(b, key)
		if e.exists(a, key) {
			e.t.Errorf("Exists(%s) after ForceRelease from another instance = true, want false", show(key))
		}
		if !e.acquire(b, key, next, hold) {
			e.t.Fatalf("Acquire(%s) by a new owner after ForceRelease = false, want true", show(key))
		}
		if e.release(a, key, holder) {
			e.t.Errorf("Release(%s) by the force-released holder = true, want false: it freed the new owner's lock", show(key))
		}
		if !e.release(b, key, next) {
			e.t.Errorf("Release(%s) by the new owner = false, want true", show(key))
		}
	})
	e.sub("FreeKey", func(e *env) {
		key := e.key("free")
		e.forceRelease(a, key) // never taken
		e.forceRelease(a, key) // and again
		owner := newOwner()
		e.mustAcquire(b, key, owner, hold)
		e.release(b, key, owner)
		e.forceRelease(a, key) // released
		if e.exists(b, key) {
			e.t.Errorf("Exists(%s) = true after ForceRelease of a free key, want false", show(key))
		}
	})
}
