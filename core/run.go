package core

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Mode says how Run acquires: one attempt, or waiting.
type Mode int

// The acquisition modes.
const (
	ModeTry   Mode = iota // one attempt; *NotAcquiredError when held
	ModeBlock             // wait as Block does
)

// errTTLPassed is the cause of a loss found by the client-side clock alone.
var errTTLPassed = errors.New("the TTL passed before the lock was refreshed")

// Run acquires the lock (once, or waiting, by mode), runs fn under it and
// releases it when fn returns, fails or panics (the panic goes on after the
// release). fn's context derives from ctx and is cancelled when the lock is
// lost (cause: a *LostError), when the manager closes (cause: ErrClosed) or
// when its client-side expiry passes without a refresh.
//
// Run returns fn's error unchanged; a *LostError when the lock was not held
// from start to finish, even if fn returned nil (joined with fn's error when
// there is one); a *NotAcquiredError when the lock could not be had; or the
// error of a failed release.
func (l *Lock) Run(ctx context.Context, mode Mode, o Options, fn func(context.Context) error) error {
	if err := l.usable(ctx); err != nil {
		return err
	}
	if fn == nil {
		return &InvalidArgumentError{Field: "fn", Reason: "must not be nil"}
	}
	o, err := o.resolve(l.ttl)
	if err != nil {
		return err
	}
	l.op.Lock()
	if mode == ModeBlock {
		err = l.block(ctx, o)
	} else {
		var ok bool
		if ok, err = l.acquireOnce(ctx); err == nil && !ok {
			err = &NotAcquiredError{Key: l.key}
		}
	}
	l.op.Unlock()
	if err != nil {
		return err
	}
	return l.runHeld(ctx, o, fn)
}

// runHeld runs fn on a lock this handle has just acquired.
func (l *Lock) runHeld(ctx context.Context, o Options, fn func(context.Context) error) (err error) {
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
	expires := l.expires
	l.mu.Unlock()
	if !time.Now().Before(expires) {
		// The acquire itself took the whole TTL: the lock may already be
		// someone else's, so fn must not start.
		l.stopRun(&LostError{Key: l.key, Cause: errTTLPassed})
		if o.Refresh {
			close(done) // the refresher never started
			l.m.wg.Done()
		}
		return l.abandon(ctx, &LostError{Key: l.key, Cause: errTTLPassed})
	}

	// The local view never outlives the real lock: at the client-side
	// expiry, fn's context ends, unless a refresh pushes it out first.
	l.m.expiry.add(l, expires, cancel)
	if o.Refresh {
		go l.refreshLoop(o.RefreshEvery, stop, done, cancel)
	}

	finished := false
	defer func() {
		if !finished { // fn panicked: release, and let the panic go on
			_ = l.finish(ctx, runCtx, done, nil)
		}
	}()
	fnErr := fn(runCtx)
	finished = true
	return l.finish(ctx, runCtx, done, fnErr)
}

// finish stops the refresher, releases the lock and decides what Run
// reports.
func (l *Lock) finish(ctx, runCtx context.Context, done chan struct{}, fnErr error) error {
	l.m.expiry.remove(l)
	cause := context.Cause(runCtx) // read before stopRun cancels it for cleanup
	l.stopRun(context.Canceled)
	if done != nil {
		<-done
	}

	now := time.Now()
	l.mu.Lock()
	stillMine := l.held && now.Before(l.expires)
	l.mu.Unlock()
	l.op.Lock()
	released, relErr := l.releaseAt(ctx, now)
	l.op.Unlock()

	// The engine itself set cause, so a type check suffices (and, unlike
	// errors.As, costs no allocation on this path).
	var bad error
	lost, _ := cause.(*LostError)
	switch {
	case lost != nil:
		bad = lost
	case errors.Is(cause, ErrClosed) || (l.m.closed.Load() && !stillMine):
		bad = l.closedErr()
	case !stillMine || (!released && relErr == nil):
		bad = &LostError{Key: l.key}
	case relErr != nil:
		bad = relErr
	default:
		return fnErr
	}
	if fnErr == nil {
		return bad
	}
	return errors.Join(fnErr, bad)
}

// closedErr is what a Run interrupted by Manager.Close reports: Close has
// cancelled fn and released the lock.
func (l *Lock) closedErr() error {
	return fmt.Errorf("lock: %q: manager closed while fn ran: %w", l.key, ErrClosed)
}

// abandon gives back a lock whose fn will not run, and returns why.
func (l *Lock) abandon(ctx context.Context, why error) error {
	l.op.Lock()
	_, _ = l.release(ctx)
	l.op.Unlock()
	if errors.Is(why, ErrClosed) {
		return l.closedErr()
	}
	return why
}

// refreshLoop extends the lock every `every` while fn runs. A refresh that
// finds the lock gone cancels fn at once; failing refreshes are retried more
// often until the client-side expiry, where the expiry queue cancels fn.
func (l *Lock) refreshLoop(every time.Duration, stop, done chan struct{}, cancel context.CancelCauseFunc) {
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
		ctx, cancelAttempt := context.WithDeadline(context.Background(), expires)
		stopOnStop := context.AfterFunc(l.m.life, cancelAttempt)
		ok, err := l.refresh(ctx)
		stopOnStop()
		cancelAttempt()
		switch {
		case err == nil && ok:
			t.Reset(every)
		case err == nil:
			cancel(&LostError{Key: l.key})
			return
		default:
			left := time.Until(expires)
			if left <= 0 {
				cancel(&LostError{Key: l.key, Cause: err})
				return
			}
			// Retry sooner, but not in a tight loop.
			t.Reset(max(min(every, left/2), time.Millisecond))
		}
	}
}
