package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/zerotal/lock/driver"
)

// Acquire takes key for owner for ttl when it is free, expired, held by a
// local process that has exited, or already held by owner (then only the TTL
// is reset).
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := d.AcquireFenced(ctx, key, owner, ttl)
	return ok, err
}

// AcquireFenced is Acquire that also returns the acquisition's fencing token:
// above the key's previous token on a takeover (one more, or the start of
// this Driver's epoch if that is higher; see epoch.go), the same token when
// owner already holds key.
func (d *Driver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	if d.closed.Load() {
		return 0, false, ErrClosed
	}
	base, err := d.tokenBase(ctx)
	if err != nil {
		return 0, false, d.fail("acquire", err)
	}
	id := acquisitionIDs.Add(1)
	var r busyRetry
	for {
		// Unlike release and extend, acquire may read the clock before the
		// call waits for the connection and the database: an early now can
		// only refuse a takeover of a lease that lapsed meanwhile (plain
		// contention, which the caller retries) and end the new lease no
		// later than ttl after the commit. Binding it costs less than calling
		// nowFunc and expiryFunc inside the hottest statement.
		now := time.Now().UnixNano()
		res, err := d.acquireStmt.ExecContext(ctx, key, owner, now, expiry(now, ttl), id, base)
		var changed int64
		if err == nil {
			changed, err = res.RowsAffected()
		}
		// Taken whatever happened, so that a failed attempt leaves no note.
		token, noted := takeNotedToken(id)
		if again, err := r.again(ctx, err); !again {
			switch {
			case err != nil:
				return 0, false, d.fail("acquire", err)
			case changed == 0:
				return 0, false, nil
			}
			if !noted {
				token = base // a new row: the key's first acquisition
			}
			if err := d.coverToken(ctx, token); err != nil {
				// The key is taken, but its token is not covered
				// by an epoch on disk: it must not be handed out.
				d.giveBack(key, owner)
				return 0, false, d.fail("acquire", err)
			}
			d.held.Keep(d.room(key), key, owner)
			return uint64(token), true, nil
		}
	}
}

// Release frees key if owner holds it and its TTL has not passed. The key's
// row, and so its token counter, stays.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if d.closed.Load() {
		return false, ErrClosed
	}
	return d.release(ctx, key, owner)
}

// release is Release without the closed check: a wait that Close ended gives
// back what its last try took while Close waits for it (see AcquireWait).
func (d *Driver) release(ctx context.Context, key, owner string) (bool, error) {
	ok, err := d.update(ctx, "release", d.releaseStmt, key, owner)
	switch {
	case ok:
		// The held file goes (or the room is poked), which wakes the
		// waiters of other processes; the hub wakes this one's.
		d.held.Released(d.room(key), key, owner)
		d.hub.notify(key)
	case err == nil:
		d.held.Forget(key, owner) // lost: owner holds it no more
	}
	return ok, err
}

// Extend sets key's expiry to ttl from now if owner holds it and its TTL has
// not passed. It never takes a free key.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if d.closed.Load() {
		return false, ErrClosed
	}
	return d.update(ctx, "extend", d.extendStmt, key, owner, int64(ttl))
}

// ForceRelease frees key whoever holds it.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if d.closed.Load() {
		return ErrClosed
	}
	ok, err := d.update(ctx, "force release", d.forceStmt, key)
	if ok {
		d.held.Released(d.room(key), key, "")
		d.hub.notify(key)
	}
	return err
}

// update runs a guarded UPDATE and reports whether it changed a row. The
// statements read the clock themselves (see nowFunc): a lock that expired
// while the call waited for the connection or the database must not be
// released or extended on the strength of an earlier reading.
func (d *Driver) update(ctx context.Context, op string, stmt *sql.Stmt, args ...any) (bool, error) {
	var r busyRetry
	for {
		res, err := stmt.ExecContext(ctx, args...)
		var n int64
		if err == nil {
			n, err = res.RowsAffected()
		}
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return false, d.fail(op, err)
			}
			return n > 0, nil
		}
	}
}

// Exists reports whether key has a live holder: owned, not expired, and not
// held by a local process that has exited.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if d.closed.Load() {
		return false, ErrClosed
	}
	var r busyRetry
	for {
		var held bool
		err := d.existsStmt.QueryRowContext(ctx, key, d.self.Scope).Scan(&held)
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return false, d.fail("exists", err)
			}
			return held, nil
		}
	}
}

// Inspect describes key's live holder, with the pid and host name of its
// process.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if d.closed.Load() {
		return driver.Holder{}, false, ErrClosed
	}
	var r busyRetry
	for {
		var (
			h                    driver.Holder
			token, acquired, exp int64
			pid                  int64
		)
		err := d.inspectStmt.QueryRowContext(ctx, key, d.self.Scope).
			Scan(&h.Owner, &token, &acquired, &exp, &pid, &h.Host)
		if errors.Is(err, sql.ErrNoRows) {
			return driver.Holder{}, false, nil
		}
		if again, err := r.again(ctx, err); !again {
			if err != nil {
				return driver.Holder{}, false, d.fail("inspect", err)
			}
			h.Token = uint64(token)
			h.AcquiredAt = time.Unix(0, acquired)
			h.ExpiresAt = time.Unix(0, exp)
			h.PID = int(pid)
			return h, true, nil
		}
	}
}

// Subscribe returns a channel that receives a notice when key is released or
// force-released through any Driver of this process on the same database.
// Releases by other processes and expiries send nothing here: waiters of
// other processes are woken through the wait rooms (see AcquireWait).
func (d *Driver) Subscribe(key string) (<-chan struct{}, func()) {
	return d.hub.subscribe(key)
}

// fail wraps a failed operation's error. A failure caused by a concurrent
// Close is reported as ErrClosed.
func (d *Driver) fail(op string, err error) error {
	if d.closed.Load() && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("sqlite lock driver %q: %s: %w", d.path, op, ErrClosed)
	}
	return fmt.Errorf("sqlite lock driver %q: %s: %w", d.path, op, typed(err))
}

// expiry returns now + ttl in Unix nanoseconds, saturating instead of
// overflowing for absurdly long TTLs.
func expiry(now int64, ttl time.Duration) int64 {
	if ttl > 0 && int64(ttl) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(ttl)
}
