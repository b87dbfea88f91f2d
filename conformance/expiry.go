package conformance

import (
	"time"

	"github.com/zerotal/lock/driver"
)

// A lock taken by a call sent at time s cannot lawfully expire before s+ttl:
// the backend set the TTL no earlier than s. The checks below therefore
// measure from the send time when they assert a key is still held, and only
// trust an answer that came back before s+ttl. When they assert a key is
// free, they measure from when the acquiring call returned, plus ExpirySlack.

// testExpiry checks that a lock is held until its TTL and free soon after,
// down to millisecond TTLs.
func testExpiry(e *env) {
	a, b := e.open(), e.open()
	e.sub("HeldUntilTTL", func(e *env) {
		e.timed(300*time.Millisecond, func(ttl time.Duration) string {
			key, holder, other := e.key("held-"+ttl.String()), newOwner(), newOwner()
			sent := time.Now()
			e.mustAcquire(a, key, holder, ttl)
			acquired := time.Now()
			until := sent.Add(ttl)
			// Right away and two thirds into the TTL, the key must be held.
			for _, into := range []time.Duration{0, ttl * 2 / 3} {
				e.sleepUntil(sent.Add(into))
				held := e.exists(b, key)
				stolen := e.acquire(b, key, other, hold)
				if done := time.Now(); done.After(until) {
					return late(done, until)
				}
				if !held {
					e.t.Errorf("Exists(%s) = false %v into a TTL of %v, want true: the lock expired early",
						show(key), time.Since(sent).Round(time.Millisecond), ttl)
				}
				if stolen {
					e.t.Errorf("instance B: Acquire(%s) = true %v into instance A's TTL of %v, want false: two owners held one key",
						show(key), time.Since(sent).Round(time.Millisecond), ttl)
					return ""
				}
			}
			e.sleepUntil(until)
			deadline := acquired.Add(ttl + e.slack)
			if !e.pollUntil(deadline, func() bool { return e.acquire(b, key, other, hold) }) {
				e.t.Errorf("instance B could not Acquire(%s) %v after instance A took it with TTL %v (ExpirySlack %v): the lock did not expire",
					show(key), time.Since(acquired).Round(time.Millisecond), ttl, e.slack)
				return ""
			}
			if !e.exists(a, key) {
				e.t.Errorf("Exists(%s) = false right after instance B took the expired key, want true", show(key))
			}
			e.release(b, key, other)
			return ""
		})
	})
	for _, ttl := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		e.sub(ttl.String(), func(e *env) {
			key, holder, other := e.key("short"), newOwner(), newOwner()
			sent := time.Now()
			e.mustAcquire(a, key, holder, ttl)
			deadline := time.Now().Add(ttl + e.slack)
			e.sleepUntil(sent.Add(ttl))
			if !e.pollUntil(deadline, func() bool { return e.acquire(b, key, other, hold) }) {
				e.t.Fatalf("instance B could not Acquire(%s) %v after instance A took it with TTL %v (ExpirySlack %v): millisecond TTLs must expire on time (rounded up to seconds?)",
					show(key), time.Since(sent).Round(time.Millisecond), ttl, e.slack)
			}
			e.release(b, key, other)
		})
	}
}

// testRefresh checks the way the engine keeps a lock alive: Extend when the
// driver is an Extender, otherwise Acquire by the same owner.
func testRefresh(e *env) {
	a, b := e.open(), e.open()
	name, refreshA := e.refresher(a)
	_, refreshB := e.refresher(b)
	e.sub("KeepsAlive", func(e *env) {
		const rounds = 4
		e.timed(200*time.Millisecond, func(ttl time.Duration) string {
			key, holder, other := e.key("kept-"+ttl.String()), newOwner(), newOwner()
			last := time.Now()
			e.mustAcquire(a, key, holder, ttl)
			for round := 1; round <= rounds; round++ {
				e.sleepUntil(last.Add(ttl / 2))
				sent := time.Now()
				ok := refreshA(key, holder, ttl)
				if done := time.Now(); done.After(last.Add(ttl)) {
					return late(done, last.Add(ttl))
				}
				if !ok {
					e.t.Errorf("%s(%s) by the holder, round %d, %v after the previous refresh with TTL %v = false, want true",
						name, show(key), round, sent.Sub(last).Round(time.Millisecond), ttl)
					return ""
				}
				last = sent
			}
			// rounds*ttl/2 after the acquire, twice the TTL, only the
			// refreshes explain a lock still held.
			held := e.exists(b, key)
			stolen := e.acquire(b, key, other, hold)
			if done := time.Now(); done.After(last.Add(ttl)) {
				return late(done, last.Add(ttl))
			}
			if !held || stolen {
				e.t.Errorf("after %d refreshes with %s, each within the TTL %v: Exists = %v, another owner's Acquire = %v; want true, false",
					rounds, name, ttl, held, stolen)
				return ""
			}
			if !e.release(a, key, holder) {
				e.t.Errorf("Release(%s) by the refreshing holder = false, want true", show(key))
			}
			return ""
		})
	})
	e.sub("NonOwner", func(e *env) {
		key, holder, other := e.key("not-yours"), newOwner(), newOwner()
		e.mustAcquire(a, key, holder, hold)
		if refreshB(key, other, hold) {
			e.t.Errorf("%s(%s) by a non-owner on another instance = true, want false", name, show(key))
		}
		if refreshA(key, other, hold) {
			e.t.Errorf("%s(%s) by a non-owner on the holder's instance = true, want false", name, show(key))
		}
		if !e.release(a, key, holder) {
			e.t.Errorf("Release(%s) by the holder after a non-owner's %s = false, want true: the non-owner took the lock", show(key), name)
		}
	})
	e.sub("NonOwnerDoesNotProlong", func(e *env) {
		const ttl = 100 * time.Millisecond
		key, holder, other, next := e.key("not-prolonged"), newOwner(), newOwner(), newOwner()
		sent := time.Now()
		e.mustAcquire(a, key, holder, ttl)
		deadline := time.Now().Add(ttl + e.slack)
		if refreshB(key, other, hold) {
			e.t.Errorf("%s(%s, %v) by a non-owner = true, want false", name, show(key), hold)
		}
		e.sleepUntil(sent.Add(ttl))
		if !e.pollUntil(deadline, func() bool { return e.acquire(b, key, next, hold) }) {
			e.t.Errorf("%s(%s, %v) by a non-owner kept the lock alive: still held %v after its holder's TTL %v (ExpirySlack %v)",
				name, show(key), hold, time.Since(sent).Round(time.Millisecond), ttl, e.slack)
			return
		}
		e.release(b, key, next)
	})
	e.sub("ExtendNeverTakesFree", func(e *env) {
		xa, ok := a.(driver.Extender)
		if !ok {
			e.t.Skipf("%T does not implement driver.Extender; the Acquire fallback may take a free key by design", a)
		}
		extend := func(key, owner string, ttl time.Duration) bool {
			e.t.Helper()
			ok, err := xa.Extend(e.ctx, key, owner, ttl)
			if err != nil {
				e.t.Fatalf("Extend(%s, %s, %v): unexpected error: %v", show(key), owner, ttl, err)
			}
			return ok
		}
		// taken reports a key that Extend took although it was free: one
		// that another owner cannot acquire now.
		taken := func(key, state string) {
			e.t.Helper()
			other := newOwner()
			if !e.acquire(b, key, other, hold) {
				e.t.Errorf("Acquire(%s) by a new owner after Extend on the %s key = false, want true: Extend took the free key (or the key never freed)", show(key), state)
				return
			}
			e.release(b, key, other)
		}

		key, owner := e.key("never-taken"), newOwner()
		if extend(key, owner, hold) {
			e.t.Errorf("Extend(%s) on a key never taken = true, want false", show(key))
		}
		taken(key, "never taken")

		key = e.key("released")
		e.mustAcquire(a, key, owner, hold)
		e.release(a, key, owner)
		if extend(key, owner, hold) {
			e.t.Errorf("Extend(%s) by its former holder after Release = true, want false", show(key))
		}
		taken(key, "released")

		const ttl = 5 * time.Millisecond
		key = e.key("expired")
		e.mustAcquire(a, key, owner, ttl)
		// Let the TTL and its slack pass in full, so this does not depend
		// on Exists reporting expiry correctly.
		e.sleepUntil(time.Now().Add(ttl + e.slack))
		if extend(key, owner, hold) {
			e.t.Errorf("Extend(%s) by its holder after its TTL %v had passed (plus ExpirySlack %v) = true, want false: Extend revived an expired lock",
				show(key), ttl, e.slack)
		}
		taken(key, "expired")
	})
}

// testReacquire checks that Acquire by the owner already holding a key
// succeeds, resets the TTL, and keeps the fencing token.
func testReacquire(e *env) {
	a, b := e.open(), e.open()
	e.sub("ResetsTTL", func(e *env) {
		e.timed(100*time.Millisecond, func(first time.Duration) string {
			// The second TTL outlasts the first plus its slack, so a key
			// still held after that is held by virtue of the reset alone.
			second := first + e.slack + 400*time.Millisecond
			key, holder, other := e.key("reset-"+first.String()), newOwner(), newOwner()
			sent := time.Now()
			e.mustAcquire(a, key, holder, first)
			e.sleepUntil(sent.Add(first / 2))
			resent := time.Now()
			ok := e.acquire(a, key, holder, second)
			if done := time.Now(); done.After(sent.Add(first)) {
				return late(done, sent.Add(first))
			}
			if !ok {
				e.t.Errorf("Acquire(%s) by the owner already holding it = false, want true (same-owner Acquire resets the TTL)", show(key))
				return ""
			}
			e.sleepUntil(sent.Add(first + e.slack + 50*time.Millisecond))
			held := e.exists(b, key)
			stolen := e.acquire(b, key, other, hold)
			if done := time.Now(); done.After(resent.Add(second)) {
				return late(done, resent.Add(second))
			}
			if !held || stolen {
				e.t.Errorf("%v after the first Acquire (TTL %v) and %v after the holder re-acquired with TTL %v: Exists = %v, another owner's Acquire = %v; want true, false: same-owner Acquire did not reset the TTL",
					time.Since(sent).Round(time.Millisecond), first, time.Since(resent).Round(time.Millisecond), second, held, stolen)
				return ""
			}
			if !e.release(a, key, holder) {
				e.t.Errorf("Release(%s) by the holder after its re-acquire = false, want true", show(key))
			}
			return ""
		})
	})
	e.sub("OtherOwnerStillExcluded", func(e *env) {
		key, holder, other := e.key("excluded"), newOwner(), newOwner()
		e.mustAcquire(a, key, holder, hold)
		if !e.acquire(b, key, holder, hold) {
			e.t.Errorf("Acquire(%s) by the holder's owner token from another instance = false, want true", show(key))
		}
		if e.acquire(b, key, other, hold) {
			e.t.Errorf("Acquire(%s) by another owner after the holder re-acquired = true, want false", show(key))
		}
		e.release(a, key, holder)
	})
	e.sub("KeepsToken", func(e *env) {
		fa, ok := a.(driver.Fencer)
		if !ok {
			e.t.Skipf("%T does not implement driver.Fencer", a)
		}
		key, holder := e.key("token"), newOwner()
		first := e.fenced(fa, key, holder, hold)
		again, ok, err := fa.AcquireFenced(e.ctx, key, holder, hold)
		if err != nil || !ok {
			e.t.Fatalf("AcquireFenced(%s) by the owner already holding it = %d, %v, %v; want true, nil", show(key), again, ok, err)
		}
		if again != first {
			e.t.Errorf("AcquireFenced(%s) by the owner already holding it gave token %d, want the acquisition's token %d unchanged", show(key), again, first)
		}
		if !e.acquire(a, key, holder, hold) {
			e.t.Fatalf("Acquire(%s) by the owner already holding it = false, want true", show(key))
		}
		if last := e.fenced(fa, key, holder, hold); last != first {
			e.t.Errorf("token after a plain same-owner Acquire is %d, want the acquisition's token %d unchanged", last, first)
		}
		e.release(a, key, holder)
	})
}
