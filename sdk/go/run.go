package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// run is Try and Block: it acquires the lock (once for OpTry, waiting for
// OpBlock),
// runs fn under it and releases it when fn returns, fails or panics (the
// panic goes on after the release). fn's context derives from ctx and is
// cancelled when the lock is lost (cause: a *LostError), when the manager
// closes (cause: a *LostError matching ErrClosed) or when its client-side
// expiry passes without a refresh.
//
// run returns fn's error unchanged; a *LostError when the lock was not held
// from start to finish under the acquisition run made, even if fn returned
// nil (joined with fn's error when there is one); a *NotAcquiredError when
// the lock could not be had; or the error of a failed release.
func (l *ManagedLock) run(ctx context.Context, op Op, opts []Option, fn func(context.Context) error) (err error) {
	if err := l.usable(ctx); err != nil {
		return err
	}
	if fn == nil {
		return &InvalidArgumentError{Field: "fn", Reason: "must not be nil"}
	}
	o, err := newOptions(opts).resolve(l.ttl)
	if err != nil {
		return err
	}
	ctx = l.m.obs.start(ctx, l, op)
	defer l.m.obs.end(ctx, l, op, &err)
	l.op.Lock()
	if op == OpBlock {
		err = l.blockFor(ctx, o, op)
	} else {
		var ok bool
		if ok, err = l.acquireOnce(ctx, op); err == nil && !ok {
			err = &NotAcquiredError{Key: l.userKey}
		}
	}
	l.op.Unlock()
	if err != nil {
		return err
	}
	err = errPanicked // what the deferred end reports if fn panics
	return l.runHeld(ctx, o, fn)
}

// runHeld runs fn on a lock this handle has just acquired.
func (l *ManagedLock) runHeld(ctx context.Context, o options, fn func(context.Context) error) (err error) {
	cctx, cancel := context.WithCancelCause(ctx)
	runCtx := &runContext{Context: cctx, lock: l}
	var stop, done chan struct{}
	if o.Refresh {
		stop, done = make(chan struct{}), make(chan struct{})
	}
	if o.Refresh && !l.m.startRefresher() {
		cancel(ErrClosed)
		return l.abandon(ctx, ErrClosed)
	}
	l.mu.Lock()
	if !l.held || l.m.closed.Load() {
		// Close got here first and has released, or is about to release,
		// the lock: running fn now would run it unprotected.
		l.mu.Unlock()
		cancel(ErrClosed)
		if o.Refresh {
			l.m.wg.Done()
		}
		return l.abandon(ctx, ErrClosed)
	}
	l.cancel, l.stop = cancel, stop
	l.watch.running(ctx)
	owner, expires := l.ownerToken, l.expires
	l.mu.Unlock()
	if !time.Now().Before(expires) {
		// The acquire itself took the whole TTL: the lock may already be
		// someone else's, so fn must not start.
		lost := l.lostError(LostExpired, nil)
		l.m.obs.lost(ctx, l, owner, lost)
		l.stopRun(lost)
		if o.Refresh {
			close(done) // the refresher never started
			l.m.wg.Done()
		}
		return l.abandon(ctx, lost)
	}

	// The local view never outlives the real lock: at the client-side
	// expiry, fn's context ends, unless a refresh pushes it out first.
	l.m.expiry.add(l, expires, cancel)
	if o.Refresh {
		// The refresher's calls carry ctx's values (a trace, say), not its
		// cancellation.
		go l.refreshLoop(context.WithoutCancel(ctx), o.RefreshEvery, stop, done, cancel)
	}

	finished := false
	defer func() {
		if !finished { // fn panicked: release, and let the panic go on
			_ = l.finish(ctx, runCtx, owner, done, nil)
		}
	}()
	fnErr := fn(runCtx)
	finished = true
	return l.finish(ctx, runCtx, owner, done, fnErr)
}

// finish stops the refresher, releases the lock and decides what Run
// reports. owner is the acquisition Run made: the work ran under the lock
// only if that acquisition is still the handle's, and still live.
func (l *ManagedLock) finish(ctx, runCtx context.Context, owner string, done chan struct{}, fnErr error) error {
	l.m.expiry.remove(l)
	cause := context.Cause(runCtx) // read before stopRun cancels it for cleanup
	l.stopRun(context.Canceled)
	if done != nil {
		<-done
	}

	now := time.Now()
	l.mu.Lock()
	stillMine := l.held && l.ownerToken == owner && now.Before(l.expires)
	expired := l.held && l.ownerToken == owner && !now.Before(l.expires)
	reacquired := l.held && l.ownerToken != owner
	recorded := l.lost // set when a call of fn's own found the lock gone
	l.mu.Unlock()
	l.op.Lock()
	released, relErr := l.releaseAt(ctx, now)
	l.op.Unlock()

	// The engine itself set cause, so a type check suffices (and, unlike
	// errors.As, costs no allocation on this path).
	lost, _ := cause.(*LostError)
	var bad error
	switch {
	case lost != nil && isClosedLoss(lost):
		bad = l.closedErr()
	case lost != nil:
		bad = lost
	case !stillMine && reacquired:
		bad = l.lostError(LostReleased, nil)
	case !stillMine && recorded != nil:
		bad = recorded
	case !stillMine && l.m.closed.Load():
		bad = l.closedErr()
	case !stillMine && expired:
		bad = l.lostError(LostExpired, nil)
	case !stillMine:
		bad = l.lostError(LostReleased, nil)
	case relErr != nil:
		bad = relErr
	case !released && l.m.closed.Load():
		bad = l.closedErr() // Close released it
	case !released:
		bad = l.whyReleaseFound(ctx)
	default:
		return fnErr
	}
	if lost, ok := bad.(*LostError); ok {
		l.m.obs.lost(ctx, l, owner, lost) // unless it was reported when it happened
	}
	if fnErr == nil {
		return bad
	}
	return errors.Join(fnErr, bad)
}

// whyReleaseFound is the loss a release reports when it found the lock
// already gone: without a refresher nothing else looked.
func (l *ManagedLock) whyReleaseFound(ctx context.Context) *LostError {
	if !l.m.enter() {
		return l.lostError(LostGone, nil)
	}
	defer l.m.leave()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return l.whyGone(rctx)
}

// isClosedLoss reports whether lost is the loss Close caused.
func isClosedLoss(lost *LostError) bool {
	return lost.Reason == LostClosed
}

// closedErr is what a Run interrupted by Manager.Close reports: Close has
// cancelled fn and released the lock.
func (l *ManagedLock) closedErr() error {
	return fmt.Errorf("lock: %q: manager closed while fn ran: %w", l.userKey, ErrClosed)
}

// abandon gives back a lock whose fn will not run, and returns why.
func (l *ManagedLock) abandon(ctx context.Context, why error) error {
	l.op.Lock()
	_, _ = l.releaseAt(ctx, time.Now())
	l.op.Unlock()
	if errors.Is(why, ErrClosed) {
		return l.closedErr()
	}
	return why
}

// refreshLoop extends the lock every `every` while fn runs. A refresh that
// finds the lock gone cancels fn at once; failing refreshes are retried more
// often until the client-side expiry, where the expiry queue cancels fn.
// Each attempt's context carries the values of vals.
func (l *ManagedLock) refreshLoop(vals context.Context, every time.Duration, stop, done chan struct{}, cancel context.CancelCauseFunc) {
	defer l.m.wg.Done()
	defer close(done)
	// The first refresh must come before the client-side expiry even when
	// the acquire (a long Block hand-off, say) used up part of the TTL.
	l.mu.Lock()
	first := min(every, time.Until(l.expires)/2)
	l.mu.Unlock()
	t := time.NewTimer(max(first, 0))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		expires := l.expires
		l.mu.Unlock()
		// A refresh is worthless once the lock has expired: bound it there.
		ctx, cancelAttempt := context.WithDeadline(vals, expires)
		stopOnStop := context.AfterFunc(l.m.life, cancelAttempt)
		ok, err := l.refreshHeld(ctx)
		stopOnStop()
		cancelAttempt()
		switch {
		case err == nil && ok:
			t.Reset(every)
		case err == nil:
			// refresh has recorded the loss and cancelled fn with it.
			return
		default:
			left := time.Until(expires)
			if left <= 0 {
				// refresh has recorded the loss, unless a refresh by
				// hand got there first and moved the expiry.
				l.mu.Lock()
				lost := l.lost
				l.mu.Unlock()
				if lost != nil {
					cancel(lost)
					return
				}
				left = time.Millisecond
			}
			// Retry sooner, but not in a tight loop.
			t.Reset(max(min(every, left/2), time.Millisecond))
		}
	}
}
