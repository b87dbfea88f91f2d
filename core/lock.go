package core

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zerotal/lock/core/driver"
)

// Lock is a handle on one key of a Manager. It can be acquired, released
// and acquired again; each acquisition gets a fresh owner token. A Lock is
// safe for concurrent use: operations that talk to the driver are serialised
// per handle, while the accessors never wait for the driver.
type Lock struct {
	m    *Manager
	key  string // the caller's key
	full string // prefix + key: what the driver sees
	ttl  time.Duration
	err  error // why this handle is unusable (bad key, TTL or prefix)

	op sync.Mutex // serialises acquire/release/refresh on this handle

	mu      sync.Mutex // guards what follows; never held across a driver call
	owner   string
	token   uint64
	held    bool
	expires time.Time               // monotonic: send time of the last acquire/refresh + TTL
	cancel  context.CancelCauseFunc // cancels the running Run's fn, if any
	stop    chan struct{}           // closed to stop the running refresher, if any

	// The running Run's place in the manager's expiryQueue, guarded by the
	// queue's mutex.
	runIndex   int // -1 when not queued
	runExpires time.Time
	runCancel  context.CancelCauseFunc
}

// Key returns the caller's key, without the manager's prefix.
func (l *Lock) Key() string { return l.key }

// TTL returns the lock's time to live.
func (l *Lock) TTL() time.Duration { return l.ttl }

// Owner returns the owner token of the current or most recent acquisition:
// 32 lowercase hex digits, or "" before the first one.
func (l *Lock) Owner() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner
}

// Token returns the fencing token of the current or most recent
// acquisition, or 0 when the driver mints none.
func (l *Lock) Token() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token
}

// IsAcquired reports whether this handle holds the lock as far as the
// client can tell: it was acquired, not released or found lost, and its
// client-side expiry has not passed. Only the driver knows for sure; Refresh
// asks it.
func (l *Lock) IsAcquired() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held && time.Now().Before(l.expires)
}

// ExpiresAt returns the client-side estimate of when the current
// acquisition expires: the send time of the last successful acquire or
// refresh plus the TTL. It is the zero time before the first acquisition.
func (l *Lock) ExpiresAt() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.expires
}

// usable reports why the handle cannot be used now, if it cannot.
func (l *Lock) usable(ctx context.Context) error {
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

// Acquire tries once to take the lock and reports whether it did. If this
// handle already holds it, Acquire resets the TTL (same owner token).
func (l *Lock) Acquire(ctx context.Context) (bool, error) {
	if err := l.usable(ctx); err != nil {
		return false, err
	}
	l.op.Lock()
	defer l.op.Unlock()
	return l.acquireOnce(ctx)
}

// acquireOnce makes one attempt. The caller holds l.op.
func (l *Lock) acquireOnce(ctx context.Context) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err // the caller's ctx has ended: not worth a round trip
	}
	owner, wasHeld := l.ownerForAcquire()
	sent := time.Now()
	token, ok, err := l.m.acquire(ctx, l.full, owner, l.ttl)
	if err != nil {
		return false, waitErr(ctx, l.m.driverErr("acquire", l.key, err))
	}
	if !ok {
		if wasHeld {
			l.markLost(owner)
		}
		return false, nil
	}
	if err := l.granted(owner, token, sent); err != nil {
		return false, err
	}
	return true, nil
}

// ownerForAcquire keeps the current owner token when the handle holds the
// lock (a re-acquire resets the TTL), and mints a fresh one otherwise: once
// the client-side expiry has passed, the next acquisition is a new one, with
// its own token.
func (l *Lock) ownerForAcquire() (owner string, held bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held && time.Now().Before(l.expires) {
		return l.owner, true
	}
	return newOwner(), false
}

// granted records a successful acquisition sent at sent. The handle's
// state is set before it is tracked, so the manager never sees it half made.
func (l *Lock) granted(owner string, token uint64, sent time.Time) error {
	l.mu.Lock()
	l.owner, l.token, l.held, l.expires = owner, token, true, sent.Add(l.ttl)
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
// is still the current one.
func (l *Lock) markLost(owner string) {
	l.mu.Lock()
	mine := l.held && l.owner == owner
	if mine {
		l.held = false
	}
	l.mu.Unlock()
	if mine {
		l.m.untrack(l)
	}
}

// Release frees the lock if this handle holds it; otherwise it does nothing.
// It never frees another owner's lock. It runs on a context detached from
// ctx's cancellation and bounded by ReleaseTimeout, so a cancelled request
// still frees its lock. The handle stops claiming the lock even when the
// backend fails; the lock then expires by its TTL. After Manager.Close,
// which has already released everything, it is a no-op that returns nil,
// so that a deferred Release never turns a clean shutdown into an error.
func (l *Lock) Release(ctx context.Context) error {
	if err := validateCtx(ctx); err != nil {
		return err
	}
	if l.err != nil {
		return l.err
	}
	l.op.Lock()
	defer l.op.Unlock()
	_, err := l.release(ctx)
	return err
}

// release gives the lock back and reports whether the driver still had it
// under this handle's owner. The caller holds l.op.
func (l *Lock) release(ctx context.Context) (bool, error) {
	return l.releaseAt(ctx, time.Now())
}

// releaseAt is release for a caller that has just read the clock.
func (l *Lock) releaseAt(ctx context.Context, now time.Time) (bool, error) {
	l.mu.Lock()
	if !l.held {
		l.mu.Unlock()
		return false, nil
	}
	owner := l.owner
	l.held = false
	l.mu.Unlock()
	l.m.untrack(l)

	rctx := detach(ctx, now.Add(ReleaseTimeout))
	ok, err := l.m.d.Release(rctx, l.full, owner)
	rctx.stop()
	if err != nil {
		return false, l.m.driverErr("release", l.key, err)
	}
	return ok, nil
}

// releaseForClose is Manager.Close's release.
func (l *Lock) releaseForClose() error {
	l.op.Lock()
	defer l.op.Unlock()
	_, err := l.release(context.Background())
	if errors.Is(err, ErrClosed) {
		// The DriverError is what matters to Close's caller.
		var de *DriverError
		if errors.As(err, &de) {
			return de
		}
	}
	return err
}

// ForceRelease frees the lock whoever holds it. Use it to clear a lock left
// by a holder you know is gone; it breaks mutual exclusion if that holder is
// still working.
func (l *Lock) ForceRelease(ctx context.Context) error {
	if err := l.usable(ctx); err != nil {
		return err
	}
	l.op.Lock()
	defer l.op.Unlock()
	if err := l.m.d.ForceRelease(ctx, l.full); err != nil {
		return l.m.driverErr("force release", l.key, err)
	}
	l.mu.Lock()
	owner := l.owner
	l.mu.Unlock()
	l.markLost(owner)
	return nil
}

// Refresh asks the driver to push the lock's expiry out by the TTL and
// reports whether the lock is still held. When it is gone, Refresh returns
// false and IsAcquired becomes false. On a backend failure it returns the
// error and keeps the local claim until the client-side expiry passes.
func (l *Lock) Refresh(ctx context.Context) (bool, error) {
	if err := l.usable(ctx); err != nil {
		return false, err
	}
	l.op.Lock()
	defer l.op.Unlock()
	return l.refresh(ctx)
}

// refresh extends the current acquisition. It is called with l.op held, or
// by the refresher while Run owns the handle.
func (l *Lock) refresh(ctx context.Context) (bool, error) {
	l.mu.Lock()
	if !l.held {
		l.mu.Unlock()
		return false, nil
	}
	owner, token := l.owner, l.token
	l.mu.Unlock()

	sent := time.Now()
	ok, err := l.extend(ctx, owner, token)
	if err != nil {
		l.mu.Lock()
		expired := l.held && l.owner == owner && !sent.Before(l.expires)
		l.mu.Unlock()
		if expired {
			l.markLost(owner)
		}
		return false, waitErr(ctx, l.m.driverErr("refresh", l.key, err))
	}
	if !ok {
		l.markLost(owner)
		return false, nil
	}
	expires := sent.Add(l.ttl)
	l.mu.Lock()
	mine := l.held && l.owner == owner
	if mine {
		l.expires = expires
	}
	l.mu.Unlock()
	if mine {
		// A refresh by hand inside fn moves fn's deadline as the
		// refresher's do (a no-op when no Run is under way).
		l.m.expiry.update(l, expires)
	}
	return true, nil
}

// extend is one owner-guarded TTL reset, with the best tool the driver has.
func (l *Lock) extend(ctx context.Context, owner string, token uint64) (bool, error) {
	switch {
	case l.m.extender != nil:
		return l.m.extender.Extend(ctx, l.full, owner, l.ttl)
	case l.m.fencer != nil:
		// Without Extend, Acquire would silently re-take a key we had lost.
		// A fencer shows it: a re-taken key gets a new token.
		got, ok, err := l.m.fencer.AcquireFenced(ctx, l.full, owner, l.ttl)
		if err != nil || !ok || got == token {
			return ok, err
		}
		l.releaseRaw(owner)
		return false, nil
	default:
		return l.m.d.Acquire(ctx, l.full, owner, l.ttl)
	}
}

// Holder describes who holds the key now, if the driver can tell
// (driver.Inspector); otherwise it returns an error matching
// errors.ErrUnsupported.
func (l *Lock) Holder(ctx context.Context) (driver.Holder, bool, error) {
	if err := l.usable(ctx); err != nil {
		return driver.Holder{}, false, err
	}
	return l.m.inspect(ctx, l.key, l.full)
}

// Exists reports whether anyone holds the key now.
func (l *Lock) Exists(ctx context.Context) (bool, error) {
	if err := l.usable(ctx); err != nil {
		return false, err
	}
	ok, err := l.m.d.Exists(ctx, l.full)
	if err != nil {
		return false, l.m.driverErr("exists", l.key, err)
	}
	return ok, nil
}

func (m *Manager) inspect(ctx context.Context, key, full string) (driver.Holder, bool, error) {
	if m.inspector == nil {
		return driver.Holder{}, false, &DriverError{Op: "inspect", Key: key,
			Err: fmt.Errorf("driver %T cannot describe holders: %w", m.d, errors.ErrUnsupported)}
	}
	h, ok, err := m.inspector.Inspect(ctx, full)
	if err != nil {
		return driver.Holder{}, false, m.driverErr("inspect", key, err)
	}
	return h, ok, nil
}

// stopRun cancels the running Run's fn with cause and stops its refresher.
func (l *Lock) stopRun(cause error) {
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
