package lock

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
)

// managedLockState is what a ManagedLock holds (api_gen.go declares the
// type, with its doc; this file and run.go and block.go are its behaviour).
type managedLockState struct {
	m         *Manager
	userKey   string // the caller's key
	driverKey string // prefix + key: what the driver sees
	ttl       time.Duration
	err       error // why this handle is unusable (bad key, TTL or prefix)

	op sync.Mutex // serialises acquire/release/refresh on this handle

	mu         sync.Mutex // guards what follows; never held across a driver call
	ownerToken string
	fenceToken uint64
	held       bool
	runIndex   int32                   // the running Run's place in the manager's expiryQueue, -1 when not queued; guarded by the queue's mutex
	expires    time.Time               // monotonic: send time of the last acquire/refresh + TTL
	failing    time.Time               // when refreshes of this acquisition began to fail; zero while they succeed
	failErr    error                   // the last failed refresh's error
	lost       *LostError              // why the last acquisition was lost, once it was
	cancel     context.CancelCauseFunc // cancels the running Run's fn, if any
	stop       chan struct{}           // closed to stop the running refresher, if any
	watch      *watch                  // what the observer needs; nil when nobody observes

	// The running Run's expiry, guarded by the queue's mutex.
	runExpires time.Time
	runCancel  context.CancelCauseFunc
}

// errNoLock is what a nil or zero ManagedLock answers.
var errNoLock = &InvalidArgumentError{Field: "ManagedLock", Reason: "is nil or zero; make one with Manager.Make"}

// made reports whether l came from Manager.Make; the accessors of one that
// did not return zero values, and the other methods errNoLock.
func (l *ManagedLock) made() bool { return l != nil && l.m != nil }

func (l *ManagedLock) key() string {
	if !l.made() {
		return ""
	}
	return l.userKey
}

func (l *ManagedLock) owner() string {
	if !l.made() {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ownerToken
}

func (l *ManagedLock) token() uint64 {
	if !l.made() {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fenceToken
}

func (l *ManagedLock) isAcquired() bool {
	if !l.made() {
		return false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && time.Now().Before(l.expires)
}

func (l *ManagedLock) expiresAt() time.Time {
	if !l.made() {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// usable reports why the handle cannot be used now, if it cannot.
func (l *ManagedLock) usable(ctx context.Context) error {
	if !l.made() {
		return errNoLock
	}
	if err := validateCtx(ctx); err != nil {
		return err
	}
	if l.err != nil {
		return l.err
	}
	if l.m.closed.Load() {
		return ErrClosed
	}
	return nil
}

// acquire is Acquire. On a handle that holds the lock it resets the TTL with
// the driver's owner-guarded extend: when that finds the lock gone, the loss
// is reported as one (false and a *LostError; a Run under this handle ends
// with it) rather than covered by taking the key again.
func (l *ManagedLock) acquire(ctx context.Context) (ok bool, err error) {
	if err := l.usable(ctx); err != nil {
		return false, err
	}
	ctx = l.m.obs.start(ctx, l, OpAcquire)
	defer l.m.obs.end(ctx, l, OpAcquire, &err)
	l.op.Lock()
	defer l.op.Unlock()
	return l.acquireOnce(ctx, OpAcquire)
}

// acquireOnce makes one attempt for the call op: a refresh when the handle
// holds the lock, a new acquisition otherwise. The caller holds l.op.
func (l *ManagedLock) acquireOnce(ctx context.Context, op Op) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err // the caller's ctx has ended: not worth a round trip
	}
	if l.isAcquired() {
		ok, err := l.refreshHeld(ctx)
		if err != nil || ok {
			return ok, err
		}
		l.mu.Lock()
		lost := l.lost
		l.mu.Unlock()
		return false, lost
	}
	ok, err := l.acquireNew(ctx)
	l.m.obs.acquired(ctx, l, op, nil, ok, err)
	return ok, err
}

// acquireNew makes one attempt at a new acquisition, with a fresh owner
// token. The caller holds l.op.
func (l *ManagedLock) acquireNew(ctx context.Context) (bool, error) {
	if !l.m.enter() {
		return false, ErrClosed
	}
	defer l.m.leave()
	owner := newOwner()
	sent := time.Now()
	token, ok, err := l.m.acquire(ctx, l.driverKey, owner, l.ttl)
	if err != nil {
		// The attempt may have reached the backend before it failed or was
		// cut short: give back what it may have been granted.
		l.m.cleanup(l.driverKey, owner)
		return false, waitErr(ctx, l.m.driverErr(ctx, "acquire", l.userKey, err))
	}
	if !ok {
		return false, nil
	}
	if err := l.granted(owner, token, sent); err != nil {
		return false, err
	}
	return true, nil
}

// granted records a successful acquisition sent at sent. The handle's
// state is set before it is tracked, so the manager never sees it half made.
// The caller is inside m.enter, so the driver is still open if the manager
// closed meanwhile.
func (l *ManagedLock) granted(owner string, token uint64, sent time.Time) error {
	l.mu.Lock()
	l.ownerToken, l.fenceToken, l.held, l.expires = owner, token, true, sent.Add(l.ttl)
	l.failing, l.failErr, l.lost = time.Time{}, nil, nil
	l.watch.granted(sent)
	l.mu.Unlock()
	if !l.m.track(l) {
		// Close ran while the acquire was in flight: give the key back at
		// once rather than leave it to its TTL.
		l.mu.Lock()
		l.held = false
		l.mu.Unlock()
		l.releaseRaw(owner)
		return ErrClosed
	}
	return nil
}

// markLost drops the local claim of the acquisition made with owner, if it
// is still the current one, records why, and ends a Run under it. ctx is
// the context of the call that found the loss.
func (l *ManagedLock) markLost(ctx context.Context, owner string, lost *LostError) {
	l.mu.Lock()
	mine := l.held && l.ownerToken == owner
	if mine {
		l.held, l.lost = false, lost
	}
	l.mu.Unlock()
	if mine {
		l.m.untrack(l)
		l.m.obs.lost(ctx, l, owner, lost)
		l.stopRun(lost)
		l.m.obs.dropped(ctx, l)
	}
}

// release is Release. It runs on a context detached from ctx's cancellation
// and bounded by releaseTimeout, so a cancelled request still frees its
// lock. The handle stops claiming the lock even when the backend fails; the
// lock then expires by its TTL. After Manager.Close, which has released
// everything it held, it does nothing and returns nil, so that a deferred
// Release never turns a clean shutdown into an error.
func (l *ManagedLock) release(ctx context.Context) (err error) {
	if !l.made() {
		return errNoLock
	}
	if err := validateCtx(ctx); err != nil {
		return err
	}
	if l.err != nil {
		return l.err
	}
	ctx = l.m.obs.start(ctx, l, OpRelease)
	defer l.m.obs.end(ctx, l, OpRelease, &err)
	l.op.Lock()
	defer l.op.Unlock()
	_, err = l.releaseAt(ctx, time.Now())
	return err
}

// release gives the lock back and reports whether the driver still had it
// under this handle's owner; now is the caller's reading of the clock. The
// caller holds l.op. After Close it does nothing: Close releases what the
// manager holds itself.
func (l *ManagedLock) releaseAt(ctx context.Context, now time.Time) (bool, error) {
	if !l.m.enter() {
		return false, nil
	}
	defer l.m.leave()
	return l.releaseHeld(ctx, now)
}

// releaseHeld is release without the closed check, for Close itself.
func (l *ManagedLock) releaseHeld(ctx context.Context, now time.Time) (bool, error) {
	l.mu.Lock()
	if !l.held {
		l.mu.Unlock()
		return false, nil
	}
	owner := l.ownerToken
	l.held = false
	l.mu.Unlock()
	l.m.untrack(l)

	rctx := detach(ctx, now.Add(releaseTimeout), &l.m.releaseTicks)
	ok, err := l.m.d.Release(rctx, l.driverKey, owner)
	l.m.obs.released(ctx, l, now, ok, err)
	if err != nil {
		return false, l.m.driverErr(ctx, "release", l.userKey, err)
	}
	return ok, nil
}

// releaseForClose is Manager.Close's release.
func (l *ManagedLock) releaseForClose() error {
	l.op.Lock()
	defer l.op.Unlock()
	_, err := l.releaseHeld(context.Background(), time.Now())
	if errors.Is(err, ErrClosed) {
		// The DriverError is what matters to Close's caller.
		var de *DriverError
		if errors.As(err, &de) {
			return de
		}
	}
	return err
}

// releaseRaw gives back an acquisition the handle never recorded, or no
// longer claims. The caller is inside m.enter.
func (l *ManagedLock) releaseRaw(owner string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	_, _ = l.m.d.Release(ctx, l.driverKey, owner)
	cancel()
}

// forceRelease is ForceRelease.
func (l *ManagedLock) forceRelease(ctx context.Context) (err error) {
	if err := l.usable(ctx); err != nil {
		return err
	}
	ctx = l.m.obs.start(ctx, l, OpForceRelease)
	defer l.m.obs.end(ctx, l, OpForceRelease, &err)
	l.op.Lock()
	defer l.op.Unlock()
	if !l.m.enter() {
		return ErrClosed
	}
	defer l.m.leave()
	if err := l.m.d.ForceRelease(ctx, l.driverKey); err != nil {
		return l.m.driverErr(ctx, "force release", l.userKey, err)
	}
	l.mu.Lock()
	owner := l.ownerToken
	l.mu.Unlock()
	l.markLost(ctx, owner, l.lostError(LostReleased, nil))
	return nil
}

// refresh is Refresh. On a backend failure it returns the error and keeps
// the local claim until the client-side expiry passes.
func (l *ManagedLock) refresh(ctx context.Context) (ok bool, err error) {
	if err := l.usable(ctx); err != nil {
		return false, err
	}
	ctx = l.m.obs.start(ctx, l, OpRefresh)
	defer l.m.obs.end(ctx, l, OpRefresh, &err)
	l.op.Lock()
	defer l.op.Unlock()
	return l.refreshHeld(ctx)
}

// refresh extends the current acquisition. It is called with l.op held, or
// by the refresher while Run owns the handle.
func (l *ManagedLock) refreshHeld(ctx context.Context) (bool, error) {
	l.mu.Lock()
	if !l.held {
		l.mu.Unlock()
		return false, nil
	}
	owner, token := l.ownerToken, l.fenceToken
	l.mu.Unlock()
	if !l.m.enter() {
		return false, ErrClosed
	}
	defer l.m.leave()

	sent := time.Now()
	ok, err := l.extend(ctx, owner, token)
	if err != nil {
		l.mu.Lock()
		mine := l.held && l.ownerToken == owner
		retry := !l.failing.IsZero()
		if mine {
			if l.failing.IsZero() {
				l.failing = sent
			}
			l.failErr = err
		}
		expired := mine && !sent.Before(l.expires)
		l.mu.Unlock()
		l.m.obs.refreshed(ctx, l, token, RefreshFailed, retry, err)
		if expired {
			l.markLost(ctx, owner, l.expiredError())
		}
		return false, waitErr(ctx, l.m.driverErr(ctx, "refresh", l.userKey, err))
	}
	if !ok {
		l.m.obs.refreshed(ctx, l, token, RefreshLost, false, nil)
		l.markLost(ctx, owner, l.whyGone(ctx))
		return false, nil
	}
	expires := sent.Add(l.ttl)
	l.mu.Lock()
	mine := l.held && l.ownerToken == owner
	if mine {
		l.expires, l.failing, l.failErr = expires, time.Time{}, nil
	}
	l.mu.Unlock()
	if mine {
		// A refresh by hand inside fn moves fn's deadline as the
		// refresher's do (a no-op when no Run is under way).
		l.m.expiry.update(l, expires)
	}
	l.m.obs.refreshed(ctx, l, token, RefreshOK, false, nil)
	return true, nil
}

// whyGone asks the driver, once, who holds a key that this handle's refresh
// found gone, so that the loss can say whether someone took it over. It is
// the rare path, so the extra round trip is worth the better report.
func (l *ManagedLock) whyGone(ctx context.Context) *LostError {
	lost := l.lostError(LostGone, nil)
	if l.m.inspector != nil {
		if h, held, err := l.m.inspector.Inspect(ctx, l.driverKey); err == nil && held {
			lost.Reason, lost.Token = LostTakenOver, h.Token
		}
	} else if held, err := l.m.d.Exists(ctx, l.driverKey); err == nil && held {
		lost.Reason = LostTakenOver
	}
	return lost
}

// extend is one owner-guarded TTL reset, with the best tool the driver has.
// The caller is inside m.enter.
func (l *ManagedLock) extend(ctx context.Context, owner string, token uint64) (bool, error) {
	switch {
	case l.m.extender != nil:
		return l.m.extender.Extend(ctx, l.driverKey, owner, l.ttl)
	case l.m.fencer != nil:
		// Without Extend, Acquire would silently re-take a key we had lost.
		// A fencer shows it: a re-taken key gets a new token.
		got, ok, err := l.m.fencer.AcquireFenced(ctx, l.driverKey, owner, l.ttl)
		if err != nil || !ok || got == token {
			return ok, err
		}
		l.releaseRaw(owner)
		return false, nil
	default:
		return l.m.d.Acquire(ctx, l.driverKey, owner, l.ttl)
	}
}

// holder is Holder.
func (l *ManagedLock) holder(ctx context.Context) (driver.Holder, bool, error) {
	if err := l.usable(ctx); err != nil {
		return driver.Holder{}, false, err
	}
	if !l.m.enter() {
		return driver.Holder{}, false, ErrClosed
	}
	defer l.m.leave()
	return l.m.inspect(ctx, l.userKey, l.driverKey)
}

// stopRun cancels the running Run's fn with cause and stops its refresher.
func (l *ManagedLock) stopRun(cause error) {
	l.mu.Lock()
	cancel, stop := l.cancel, l.stop
	l.cancel, l.stop = nil, nil
	l.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
	if stop != nil {
		close(stop)
	}
}

// waitErr prefers the caller's own ctx error to the driver's report of it.
func waitErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
