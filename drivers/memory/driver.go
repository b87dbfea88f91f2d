package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/zerotal/lock/driver"
)

// ErrClosed is returned, possibly wrapped, by every method of a closed
// [Driver] handle, and by AcquireWait calls that the handle's Close cancelled.
var ErrClosed = errors.New("memory: driver closed")

var errNilContext = errors.New("memory: nil context")

var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Fencer    = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
)

// Driver is one handle on a [Table]. It implements driver.Driver together
// with driver.Extender, driver.Fencer, driver.Waiter and driver.Inspector,
// and is safe for concurrent use. Make one with [New], [Shared] or
// [Table.Driver]; the zero Driver is not usable.
type Driver struct {
	table *Table

	// Guarded by table.mu, so that Close cannot interleave with an operation
	// on this handle.
	closed  bool
	waiters map[*waiter]struct{} // this handle's pending AcquireWait calls
}

// New returns a handle on a new private table: NewTable().Driver().
func New() *Driver { return NewTable().Driver() }

// Shared returns a new handle on the process-wide table:
// SharedTable().Driver().
func Shared() *Driver { return SharedTable().Driver() }

// checkTTL rejects a TTL that would make a lock expired before it is taken.
// The engine never passes one under driver.MinTTL; this guards direct
// callers.
func checkTTL(ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("memory: ttl %v is not positive", ttl)
	}
	return nil
}

// begin locks the table, reaps expired holds and returns the current instant.
// On a nil error the caller holds the table's mutex and must unlock it.
func (d *Driver) begin(ctx context.Context) (time.Duration, error) {
	if ctx == nil {
		return 0, errNilContext
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	t := d.table
	t.mu.Lock()
	if d.closed {
		t.mu.Unlock()
		return 0, ErrClosed
	}
	now := t.now()
	t.reap(now)
	return now, nil
}

// Acquire takes key for owner for ttl if it is free or expired, or resets the
// TTL if owner already holds it. A key with queued waiters is never free.
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := d.AcquireFenced(ctx, key, owner, ttl)
	return ok, err
}

// AcquireFenced is Acquire that also returns the acquisition's fencing token.
// Tokens come from one counter per table, so they increase per key across
// release and expiry; re-acquiring by the holder keeps its token.
func (d *Driver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	if err := checkTTL(ttl); err != nil {
		return 0, false, err
	}
	now, err := d.begin(ctx)
	if err != nil {
		return 0, false, err
	}
	t := d.table
	defer t.mu.Unlock()
	e := t.entries[key]
	switch {
	case e == nil || e == t.parked:
		e = t.insert(e, key, owner, now, ttl)
	case e.owner == owner:
		t.extend(e, now, ttl)
	default:
		return 0, false, nil
	}
	return e.token, true, nil
}

// AcquireWait takes key for owner for ttl, queueing behind earlier waiters
// until the holder releases it or its TTL passes. The key is handed over
// directly, in FIFO order, with no polling. If ctx ends, the call leaves the
// queue and returns ctx.Err(), unless the key was handed to it at the same
// moment: then the grant wins and the call returns the token and nil.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := checkTTL(ttl); err != nil {
		return 0, err
	}
	now, err := d.begin(ctx)
	if err != nil {
		return 0, err
	}
	t := d.table
	e := t.entries[key]
	switch {
	case e == nil || e == t.parked:
		e = t.insert(e, key, owner, now, ttl)
		token := e.token
		t.mu.Unlock()
		return token, nil
	case e.owner == owner:
		t.extend(e, now, ttl)
		token := e.token
		t.mu.Unlock()
		return token, nil
	}
	w := &waiter{owner: owner, ttl: ttl, handle: d, ready: make(chan struct{})}
	t.enqueue(e, w, now)
	t.mu.Unlock()

	select {
	case <-w.ready:
		return w.token, w.err
	case <-ctx.Done():
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if w.done {
		return w.token, w.err
	}
	t.dequeue(w, t.now())
	return 0, ctx.Err()
}

// Release frees key if owner holds it, handing it to the next waiter if there
// is one.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	now, err := d.begin(ctx)
	if err != nil {
		return false, err
	}
	t := d.table
	defer t.mu.Unlock()
	e := t.lookup(key)
	if e == nil || e.owner != owner {
		return false, nil
	}
	t.vacate(e, now)
	return true, nil
}

// ForceRelease frees key whoever holds it, handing it to the next waiter if
// there is one.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	now, err := d.begin(ctx)
	if err != nil {
		return err
	}
	t := d.table
	defer t.mu.Unlock()
	if e := t.lookup(key); e != nil {
		t.vacate(e, now)
	}
	return nil
}

// Exists reports whether anyone holds key now.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if _, err := d.begin(ctx); err != nil {
		return false, err
	}
	t := d.table
	defer t.mu.Unlock()
	return t.lookup(key) != nil, nil
}

// Extend sets key's expiry to ttl from now if owner holds it. It never takes
// a free key.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := checkTTL(ttl); err != nil {
		return false, err
	}
	now, err := d.begin(ctx)
	if err != nil {
		return false, err
	}
	t := d.table
	defer t.mu.Unlock()
	e := t.lookup(key)
	if e == nil || e.owner != owner {
		return false, nil
	}
	t.extend(e, now, ttl)
	return true, nil
}

// Inspect describes the live holder of key. PID and Host are this process's,
// since only this process can hold locks in its tables.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if _, err := d.begin(ctx); err != nil {
		return driver.Holder{}, false, err
	}
	t := d.table
	defer t.mu.Unlock()
	e := t.lookup(key)
	if e == nil {
		return driver.Holder{}, false, nil
	}
	return driver.Holder{
		Owner:      e.owner,
		Token:      e.token,
		AcquiredAt: t.epoch.Add(e.acquired),
		ExpiresAt:  t.epoch.Add(e.deadline),
		PID:        processID,
		Host:       hostname(),
	}, true, nil
}

// Close ends this handle: its pending AcquireWait calls return ErrClosed, and
// every later call on it fails with ErrClosed. Locks it holds stay until their
// TTL passes, as the driver contract allows. Other handles on the same table
// are not affected. Close is idempotent and always returns nil.
func (d *Driver) Close() error {
	t := d.table
	t.mu.Lock()
	defer t.mu.Unlock()
	if d.closed {
		return nil
	}
	d.closed = true
	now := t.now()
	for w := range d.waiters {
		e := w.entry
		e.waiters.remove(w)
		t.schedule(e, now)
		w.done, w.err = true, ErrClosed
		close(w.ready)
	}
	d.waiters = nil
	return nil
}
