package conformance

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/zerotal/lock/driver"
)

const (
	// waiterStagger separates the calls of waiters whose order matters.
	// Nothing outside a driver can observe that a waiter has joined its
	// queue, so "called first" is only well defined for calls this far
	// apart; for an in-process queue it is orders of magnitude more than
	// enough.
	waiterStagger = 100 * time.Millisecond
	// waitBound is how long a waiter that should return (after a cancel, a
	// release or a deadline) may take: generous, for a loaded machine.
	waitBound = 2 * time.Second
	// wakeBound is the median delay allowed between a Release returning and
	// the next waiter's AcquireWait returning. A queue that hands the key
	// over needs microseconds; a driver that polls at the engine's default
	// retry delay (100ms) needs tens of milliseconds.
	wakeBound = 30 * time.Millisecond
	// wakeRounds is how many hand-offs the median is taken over.
	wakeRounds = 5
)

// waitResult is what an AcquireWait call returned, and when.
type waitResult struct {
	token uint64
	err   error
	at    time.Time
}

// pendingWait is an AcquireWait call running in its own goroutine.
type pendingWait struct {
	result <-chan waitResult
	cancel context.CancelFunc
}

// startWait calls w.AcquireWait in a goroutine under a context of its own,
// and returns once the goroutine is about to call. The subtest's cleanup
// cancels the call and waits for it, so no call outlives the subtest.
func (e *env) startWait(ctx context.Context, w driver.Waiter, key, owner string, ttl time.Duration) pendingWait {
	ctx, cancel := context.WithCancel(ctx)
	result := make(chan waitResult, 1)
	calling := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		close(calling)
		token, err := w.AcquireWait(ctx, key, owner, ttl)
		result <- waitResult{token, err, time.Now()}
	}()
	e.t.Cleanup(func() {
		cancel()
		<-finished
	})
	<-calling
	return pendingWait{result: result, cancel: cancel}
}

// await returns the result of p, failing the subtest if none arrives within
// bound.
func (e *env) await(p pendingWait, bound time.Duration, what string) waitResult {
	e.t.Helper()
	timer := time.NewTimer(bound)
	defer timer.Stop()
	select {
	case r := <-p.result:
		return r
	case <-timer.C:
		e.t.Fatalf("AcquireWait still blocked %v after %s", bound, what)
		return waitResult{}
	}
}

// stagger lets time pass between two waiters' calls; see waiterStagger.
func (e *env) stagger() { e.sleepUntil(time.Now().Add(waiterStagger)) }

// testWaiter checks AcquireWait: FIFO service, cancellation, deadlines, and
// a hand-off that follows a release or an expiry at once.
func testWaiter(e *env) {
	a, b := e.open(), e.open()
	wa, ok := a.(driver.Waiter)
	if !ok {
		e.t.Skipf("%T does not implement driver.Waiter", a)
	}
	wb, ok := b.(driver.Waiter)
	if !ok {
		e.t.Fatalf("one instance from Harness.New implements driver.Waiter and another (%T) does not", b)
	}
	_, fencer := a.(driver.Fencer)
	// checkToken checks a waiter's token against the previous acquisition's.
	checkToken := func(e *env, r waitResult, prev uint64) {
		e.t.Helper()
		switch {
		case !fencer && r.token != 0:
			e.t.Errorf("AcquireWait returned token %d from a driver that is not a Fencer, want 0", r.token)
		case fencer && r.token <= prev:
			e.t.Errorf("AcquireWait returned token %d after an acquisition with token %d: tokens must strictly increase per key", r.token, prev)
		}
	}
	// take acquires a free key, fenced when the driver is a Fencer, and
	// returns the acquisition's token.
	take := func(e *env, d driver.Driver, key, owner string, ttl time.Duration) uint64 {
		e.t.Helper()
		if fencer {
			return e.fenced(d.(driver.Fencer), key, owner, ttl)
		}
		e.mustAcquire(d, key, owner, ttl)
		return 0
	}

	e.sub("FreeKey", func(e *env) {
		key, owner := e.key("free"), newOwner()
		r := e.await(e.startWait(e.ctx, wa, key, owner, hold), waitBound, "it was called on a free key")
		if r.err != nil {
			e.t.Fatalf("AcquireWait(%s) on a free key: unexpected error: %v", show(key), r.err)
		}
		checkToken(e, r, 0)
		if !e.release(b, key, owner) {
			e.t.Errorf("Release(%s) by the owner AcquireWait took it for = false, want true", show(key))
		}
	})
	e.sub("FIFO", func(e *env) {
		const waiters = 4
		key, holder := e.key("queue"), newOwner()
		prev := take(e, a, key, holder, hold)
		owners := make([]string, waiters)
		pending := make([]pendingWait, waiters)
		for i := range waiters {
			owners[i] = newOwner()
			w := []driver.Waiter{wa, wb}[i%2]
			pending[i] = e.startWait(e.ctx, w, key, owners[i], hold)
			e.stagger()
		}
		e.release(a, key, holder)
		// Each waiter that gets the key releases it, so the next in line
		// can have it: the order the results arrive in is service order.
		served := make([]int, 0, waiters)
		for range waiters {
			i, r := e.awaitAny(pending, served)
			if r.err != nil {
				e.t.Fatalf("AcquireWait of waiter #%d (called %v after the previous one): unexpected error: %v", i+1, waiterStagger, r.err)
			}
			checkToken(e, r, prev)
			prev = r.token
			served = append(served, i)
			if !e.release(b, key, owners[i]) {
				e.t.Fatalf("Release(%s) by waiter #%d, which AcquireWait served = false, want true", show(key), i+1)
			}
		}
		if want := []int{0, 1, 2, 3}; !slices.Equal(served, want) {
			e.t.Errorf("waiters called %v apart were served in the order %v, want %v (first come, first served)",
				waiterStagger, plusOne(served), plusOne(want))
		}
	})
	e.sub("Cancel", func(e *env) {
		key, holder, gone, next := e.key("cancel"), newOwner(), newOwner(), newOwner()
		take(e, a, key, holder, hold)
		cancelled := e.startWait(e.ctx, wa, key, gone, hold)
		e.stagger()
		waiting := e.startWait(e.ctx, wb, key, next, hold)
		e.stagger()
		cancelled.cancel()
		if r := e.await(cancelled, waitBound, "its context was cancelled"); !errors.Is(r.err, context.Canceled) {
			e.t.Errorf("AcquireWait after its context was cancelled returned %v, want an error matching context.Canceled", r.err)
		}
		e.release(a, key, holder)
		if r := e.await(waiting, waitBound, "the holder released the key, with the waiter ahead of it cancelled"); r.err != nil {
			e.t.Fatalf("AcquireWait behind a cancelled waiter: unexpected error: %v", r.err)
		}
		if e.release(a, key, gone) {
			e.t.Errorf("Release(%s) by the cancelled waiter's owner = true, want false: the key went to a cancelled waiter", show(key))
		}
		if !e.release(b, key, next) {
			e.t.Errorf("Release(%s) by the waiter behind the cancelled one = false, want true", show(key))
		}
	})
	e.sub("Deadline", func(e *env) {
		// Long enough for the first attempt's answer on a loaded machine:
		// a wait that ends before any answer is an outage (see
		// driver.Waiter), not a deadline.
		const patience = 500 * time.Millisecond
		key, holder := e.key("deadline"), newOwner()
		take(e, a, key, holder, hold)
		ctx, cancel := context.WithTimeout(e.ctx, patience)
		defer cancel()
		r := e.await(e.startWait(ctx, wb, key, newOwner(), hold), patience+waitBound, "its context's deadline passed")
		if !errors.Is(r.err, context.DeadlineExceeded) {
			e.t.Errorf("AcquireWait(%s) on a held key with a %v deadline returned %v, want an error matching context.DeadlineExceeded", show(key), patience, r.err)
		}
		if !e.release(a, key, holder) {
			e.t.Errorf("Release(%s) by the holder after a waiter gave up = false, want true", show(key))
		}
	})
	e.sub("HandOffOnExpiry", func(e *env) {
		const ttl = 100 * time.Millisecond
		key, holder, next := e.key("expiry"), newOwner(), newOwner()
		prev := take(e, a, key, holder, ttl)
		acquired := time.Now()
		p := e.startWait(e.ctx, wb, key, next, hold)
		r := e.await(p, ttl+e.slack+waitBound, "the holder's TTL ran out")
		if r.err != nil {
			e.t.Fatalf("AcquireWait(%s) waiting for a TTL to run out: unexpected error: %v", show(key), r.err)
		}
		if late := r.at.Sub(acquired); late > ttl+e.slack {
			e.t.Errorf("AcquireWait got the key %v after the holder took it with TTL %v, want within TTL + ExpirySlack (%v)",
				late.Round(time.Millisecond), ttl, ttl+e.slack)
		}
		checkToken(e, r, prev)
		if e.release(a, key, holder) {
			e.t.Errorf("Release(%s) by the expired holder = true, want false", show(key))
		}
		if !e.release(b, key, next) {
			e.t.Errorf("Release(%s) by the waiter that got the expired key = false, want true", show(key))
		}
	})
	e.sub("WakeOnRelease", func(e *env) {
		delays := make([]time.Duration, 0, wakeRounds)
		for round := range wakeRounds {
			key, holder, next := e.key("wake-"+string(rune('a'+round))), newOwner(), newOwner()
			take(e, a, key, holder, hold)
			p := e.startWait(e.ctx, wb, key, next, hold)
			e.stagger()
			e.release(a, key, holder)
			released := time.Now()
			r := e.await(p, waitBound, "the holder released the key")
			if r.err != nil {
				e.t.Fatalf("AcquireWait(%s): unexpected error: %v", show(key), r.err)
			}
			delays = append(delays, max(r.at.Sub(released), 0))
			e.release(b, key, next)
		}
		slices.Sort(delays)
		if median := delays[len(delays)/2]; median > wakeBound {
			e.t.Errorf("median delay from Release to the waiter's AcquireWait returning is %v over %d hand-offs (all: %v), want at most %v: a Waiter hands the key over, it does not poll",
				median, wakeRounds, delays, wakeBound)
		}
	})
}

// awaitAny returns the index and result of the first of the pending calls
// not yet served to return, failing the subtest if none does within
// waitBound.
func (e *env) awaitAny(pending []pendingWait, served []int) (int, waitResult) {
	e.t.Helper()
	deadline := time.Now().Add(waitBound)
	for time.Now().Before(deadline) {
		for i, p := range pending {
			if slices.Contains(served, i) {
				continue
			}
			select {
			case r := <-p.result:
				return i, r
			default:
			}
		}
		e.sleepUntil(time.Now().Add(time.Millisecond))
	}
	e.t.Fatalf("no waiter got the key within %v after it was released; served so far: %v", waitBound, plusOne(served))
	return 0, waitResult{}
}

// plusOne numbers waiters from 1 for messages.
func plusOne(idx []int) []int {
	out := make([]int, len(idx))
	for i, v := range idx {
		out[i] = v + 1
	}
	return out
}
