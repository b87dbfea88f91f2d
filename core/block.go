package core

import (
	"context"
	"time"
)

// Block waits until it holds the lock, the timeout passes (a
// *NotAcquiredError saying how long it waited), ctx ends (ctx's error) or the
// manager closes (ErrClosed). It waits the whole timeout unless the key frees
// earlier. Drivers that can hand a key over (driver.Waiter) or announce
// releases (driver.Notifier) wake it at once; polling at the retry delay is
// the fallback.
func (l *Lock) Block(ctx context.Context, o Options) error {
	if err := l.usable(ctx); err != nil {
		return err
	}
	// Refresh belongs to Run; a handle's Block neither uses nor checks it.
	o.Refresh, o.RefreshEvery = false, 0
	o, err := o.resolve(l.ttl)
	if err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	return l.block(ctx, o)
}

// block is Block with resolved options. The caller holds l.op.
func (l *Lock) block(ctx context.Context, o Options) error {
	start := time.Now()
	if l.m.waiter != nil && o.Timeout > 0 {
		return l.blockInDriver(ctx, o, start)
	}
	return l.blockPolling(ctx, o, start)
}

// blockPolling retries Acquire until the deadline, woken by release notices
// when the driver sends them and by a timer every retry delay in any case.
func (l *Lock) blockPolling(ctx context.Context, o Options, start time.Time) error {
	var notices <-chan struct{}
	if n := l.m.notifier; n != nil && o.Timeout > 0 {
		// Subscribe before the first attempt, so a release between a
		// failed attempt and the wait is not missed.
		ch, cancel := n.Subscribe(l.full)
		defer cancel()
		notices = ch
	}
	deadline := start.Add(o.Timeout)
	var timer *time.Timer
	for {
		ok, err := l.acquireOnce(ctx)
		if err != nil {
			return waitErr(ctx, err)
		}
		if ok {
			return nil
		}
		now := time.Now()
		if !now.Before(deadline) {
			return &NotAcquiredError{Key: l.key, Waited: now.Sub(start)}
		}
		wait := min(o.RetryDelay, deadline.Sub(now))
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-l.m.life.Done():
			return ErrClosed
		case <-notices:
		case <-timer.C:
		}
	}
}

// blockInDriver queues in a driver that hands keys over itself.
func (l *Lock) blockInDriver(ctx context.Context, o Options, start time.Time) error {
	if l.IsAcquired() {
		// Already ours: a re-acquire resets the TTL, and waiting in a
		// queue behind ourselves would deadlock. If it turns out lost,
		// acquireOnce drops the claim and we queue like anyone else.
		ok, err := l.acquireOnce(ctx)
		if err != nil || ok {
			return err
		}
	}
	deadline := start.Add(o.Timeout)
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	stop := context.AfterFunc(l.m.life, cancel)
	defer stop()
	for {
		owner := newOwner()
		called := time.Now()
		token, err := l.m.waiter.AcquireWait(wctx, l.full, owner, l.ttl)
		if err != nil {
			switch {
			case ctx.Err() != nil:
				return ctx.Err()
			case l.m.life.Err() != nil:
				return ErrClosed
			case wctx.Err() != nil:
				return &NotAcquiredError{Key: l.key, Waited: time.Since(start)}
			}
			return l.m.driverErr("acquire", l.key, err)
		}
		// The TTL started when the driver handed the key over, somewhere
		// between called and now. called is a safe anchor after a short
		// wait; after a long one it would make the lock look expired, so
		// re-anchor it with one owner-guarded extend — on a context of its
		// own: the wait's deadline may have passed just as the key arrived,
		// and a key that arrived in time is ours.
		sent := called
		if time.Since(called) > l.ttl/4 {
			sent = time.Now()
			actx, acancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
			ok, err := l.extend(actx, owner, token)
			acancel()
			switch {
			case err == nil && !ok:
				// Lost in the hand-over: give it back and queue again.
				l.releaseRaw(owner)
				continue
			case err != nil && time.Now().Before(called.Add(l.ttl)):
				sent = called // still within the TTL counted from the call
			case err != nil:
				l.releaseRaw(owner)
				return waitErr(ctx, l.m.driverErr("acquire", l.key, err))
			}
		}
		return l.granted(owner, token, sent)
	}
}

// releaseRaw gives back an acquisition the handle never recorded.
func (l *Lock) releaseRaw(owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), ReleaseTimeout)
	_, _ = l.m.d.Release(ctx, l.full, owner)
	cancel()
}

// waitErr prefers the caller's own ctx error to the driver's report of it.
func waitErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
