package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// block is ManagedLock.Block. It waits the whole timeout unless the key
// frees earlier, or the manager closes (ErrClosed). Drivers that can hand a
// key over (driver.Waiter) or announce releases (driver.Notifier) wake it at
// once; polling at the retry delay is the fallback.
//
// A wait returns at its deadline whatever the backend does: every attempt is
// bounded by what is left of the wait. A backend failure ends the wait at
// once with the backend's *DriverError, and so does a wait in which the
// backend never answered: an outage is never reported as contention.
func (l *ManagedLock) block(ctx context.Context, opts []Option) (err error) {
	if err := l.usable(ctx); err != nil {
		return err
	}
	// Refresh belongs to Run; a handle's Block neither uses nor checks it.
	o := newOptions(opts)
	o.Refresh, o.RefreshEvery = false, 0
	o, err = o.resolve(l.ttl)
	if err != nil {
		return err
	}
	ctx = l.m.obs.start(ctx, l, OpAcquireWait)
	defer l.m.obs.end(ctx, l, OpAcquireWait, &err)
	l.op.Lock()
	defer l.op.Unlock()
	return l.blockFor(ctx, o, OpAcquireWait)
}

// blockFor is block with resolved options, for the call op. The caller
// holds l.op.
func (l *ManagedLock) blockFor(ctx context.Context, o options, op Op) error {
	if l.isAcquired() {
		// Already ours: a re-acquire resets the TTL (and waiting behind
		// ourselves would deadlock); a lock found lost is reported so.
		ok, err := l.acquireOnce(ctx, op)
		if err != nil || ok {
			return err
		}
	}
	if o.Timeout == 0 {
		// One attempt, on the caller's ctx: no wait to bound it by.
		ok, err := l.acquireOnce(ctx, op)
		if err == nil && !ok {
			err = &NotAcquiredError{Key: l.userKey}
		}
		return err
	}
	w := wait{op: op, start: time.Now()}
	w.deadline = w.start.Add(o.Timeout)
	var err error
	if l.m.waiter != nil {
		err = l.blockInDriver(ctx, o, &w)
	} else {
		err = l.blockPolling(ctx, o, &w)
	}
	l.m.obs.acquired(ctx, l, op, &w, err == nil, err)
	return err
}

// wait is the state of one Block: the call it serves, when it began and
// ends, whether any attempt got an answer from the backend, and what woke
// it last.
type wait struct {
	op              Op
	start, deadline time.Time
	answered        bool
	wake            Wake
}

// ended is what a wait reports when it runs out without the lock: ctx's
// error when the caller's ctx ended it, contention otherwise.
func (w *wait) ended(key string, ctxErr error) error {
	if ctxErr != nil {
		return ctxErr
	}
	return &NotAcquiredError{Key: key, Waited: time.Since(w.start)}
}

// noAnswer is the backend error of a wait that ran out before any attempt
// got an answer: a backend that says nothing for a whole wait is failing,
// and nothing says the key is held. It does not wrap the context's error,
// which was the wait's own doing, not the caller's.
func (l *ManagedLock) noAnswer(ctx context.Context, err error) error {
	return l.m.driverErr(ctx, "acquire", l.userKey, fmt.Errorf("no answer from the backend within the wait: %s", err.Error()))
}

// blockPolling retries Acquire until the deadline, woken by release notices
// when the driver sends them and by a timer every retry delay in any case.
// Each attempt runs on a context that ends at the deadline.
func (l *ManagedLock) blockPolling(ctx context.Context, o options, w *wait) error {
	var notices <-chan struct{}
	if n := l.m.notifier; n != nil {
		// Subscribe before the first attempt, so a release between a
		// failed attempt and the wait is not missed.
		ch, cancel := n.Subscribe(l.driverKey)
		defer cancel()
		notices = ch
	}
	wctx, cancel := context.WithDeadline(ctx, w.deadline)
	defer cancel()
	var timer *time.Timer
	for {
		ok, err := l.acquireNew(wctx)
		switch {
		case err == nil && ok:
			return nil
		case err == nil:
			w.answered = true // contention
		case errors.Is(err, ErrClosed):
			return err
		case !isContextErr(err):
			return err // the backend failed, whatever the contexts did meanwhile
		case ctx.Err() != nil:
			return w.ended(l.userKey, ctx.Err())
		case wctx.Err() != nil:
			// Cut short by the deadline, its outcome unknown (and given
			// back by acquireNew): what the earlier attempts found stands.
			if !w.answered {
				return l.noAnswer(ctx, err)
			}
			return w.ended(l.userKey, nil)
		}
		now := time.Now()
		if !now.Before(w.deadline) {
			return w.ended(l.userKey, nil)
		}
		d := min(o.RetryDelay, w.deadline.Sub(now))
		if timer == nil { // the first wait: the key was held
			w.wake = WakePoll
			l.m.obs.waiting(ctx, l, w.op)
			timer = time.NewTimer(d)
			defer timer.Stop()
		} else {
			timer.Reset(d)
		}
		select {
		case <-ctx.Done():
			return w.ended(l.userKey, ctx.Err())
		case <-l.m.life.Done():
			return ErrClosed
		case <-notices:
			w.wake = WakeNotice
		case <-timer.C:
			w.wake = WakePoll
		}
	}
}

// blockInDriver queues in a driver that hands keys over itself.
func (l *ManagedLock) blockInDriver(ctx context.Context, o options, w *wait) error {
	wctx, cancel := context.WithDeadline(ctx, w.deadline)
	defer cancel()
	stop := context.AfterFunc(l.m.life, cancel)
	defer stop()
	if !l.m.enter() {
		return ErrClosed
	}
	defer l.m.leave()
	w.wake = WakeQueue
	l.m.obs.waiting(ctx, l, w.op)
	for {
		owner := newOwner()
		called := time.Now()
		token, err := l.m.waiter.AcquireWait(wctx, l.driverKey, owner, l.ttl)
		if err != nil {
			// The driver has left the queue and given back a key handed
			// over meanwhile, as the Waiter contract asks.
			switch {
			case !isContextErr(err):
				return l.m.driverErr(ctx, "acquire", l.userKey, err) // the backend failed
			case ctx.Err() != nil:
				return ctx.Err()
			case l.m.life.Err() != nil:
				return ErrClosed
			}
			return &NotAcquiredError{Key: l.userKey, Waited: time.Since(w.start)}
		}
		if sent, ok := l.anchor(wctx, owner, token, called); ok {
			return l.granted(owner, token, sent)
		}
		// Lost in the hand-over, or not confirmed within its TTL: the
		// key has been given back. Queue again while the wait lasts.
		if wctx.Err() != nil {
			return &NotAcquiredError{Key: l.userKey, Waited: time.Since(w.start)}
		}
	}
}

// anchor returns the moment the TTL of a key handed over to owner counts
// from. The TTL started when the driver handed the key over, somewhere
// between called and now: called is a safe anchor after a short wait, but
// after a long one it would make the lock look expired, so anchor re-anchors
// it with one owner-guarded extend, bounded by the wait's deadline. It
// reports false, after giving the key back, when the extend found the key
// already gone (lost in the hand-over) or could not confirm it before the
// TTL counted from called had passed.
func (l *ManagedLock) anchor(wctx context.Context, owner string, token uint64, called time.Time) (time.Time, bool) {
	if time.Since(called) <= l.ttl/4 {
		return called, true
	}
	sent := time.Now()
	ok, err := l.extend(wctx, owner, token)
	switch {
	case err == nil && ok:
		return sent, true
	case err != nil && time.Now().Before(called.Add(l.ttl)):
		return called, true // still within the TTL counted from the call
	}
	l.m.cleanup(l.driverKey, owner)
	return time.Time{}, false
}

// isContextErr reports whether err is, or wraps, a context's error.
func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}
