// Package locktest is a test kit for code that uses zerotal lock: a driver
// that wraps any other (by default a private in-memory one) and lets a test
// decide, deterministically, what the backend does next. Make the lock be
// lost now (Expire, Steal), make the next calls of an operation fail with a
// backend error (FailNext) or hang until their context ends (HangNext), add
// latency (Delay), cut the backend off and bring it back (Partition, Heal),
// and read back what was called (Calls).
//
//	d := locktest.New()
//	m := lock.New(d)
//	defer m.Close()
//	d.FailNext(locktest.Acquire, 1, nil) // the next acquire is a backend error
//
// Nothing in the kit sleeps or polls unless a test asks for latency, so the
// kit works inside a testing/synctest bubble: make the Driver inside the
// bubble (its clock is the bubble's), and minutes of TTLs, refreshes and
// delays pass at once.
//
// Keys: the kit's controls and Calls use the caller's key, as the Manager
// sees it; the kit adds the Manager's prefix, "zerotal_lock:" unless
// WithPrefix says otherwise (give it the same prefix as lock.New).
package locktest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
)

// Op is a driver operation, as the kit's controls name it. The engine
// calls Acquire for Try and ManagedLock.Acquire, AcquireWait for Block,
// Extend for refreshes, Release at the end of the work, Exists and Inspect
// to say who took a lost lock.
type Op string

// The operations.
const (
	Acquire      Op = "acquire"
	AcquireWait  Op = "acquire_wait"
	Extend       Op = "extend"
	Release      Op = "release"
	ForceRelease Op = "force_release"
	Exists       Op = "exists"
	Inspect      Op = "inspect"
	AnyOp        Op = "*" // every operation, for FailNext, HangNext and Delay
)

// ErrInjected is the error of a failure FailNext injects when it is given
// none.
var ErrInjected = errors.New("locktest: injected backend failure")

// ErrPartitioned is what every call returns while the backend is
// partitioned.
var ErrPartitioned = errors.New("locktest: backend unreachable (partitioned)")

// Call is one driver call the kit saw.
type Call struct {
	Op  Op
	Key string // the caller's key, without the prefix
	OK  bool   // what it reported: acquired, released, extended, held
	Err error  // what it returned, injected or not
}

// Option configures New and Wrap.
type Option func(*Driver)

// WithPrefix says which key prefix the Manager under test uses, so that
// the kit's controls and Calls speak of the caller's keys. The default is
// lock.New's, "zerotal_lock:".
func WithPrefix(prefix string) Option { return func(d *Driver) { d.prefix = prefix } }

// Driver is a driver.Driver under a test's control. It has the optional
// capabilities of the in-memory driver (Extender, Fencer, Waiter and
// Inspector), whatever it wraps, so that the engine behaves
// as it does on production drivers: a capability the wrapped driver lacks
// is emulated the way the engine would do without it.
type Driver struct {
	inner    driver.Driver
	prefix   string
	released chan struct{} // closed and replaced when a key may have become free

	mu          sync.Mutex
	faults      []fault
	delays      map[Op]time.Duration
	partitioned bool
	calls       []Call
}

// fault is a pending injected failure or hang.
type fault struct {
	op   Op
	n    int
	err  error // nil: hang until the ctx ends
	hang bool
}

var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Fencer    = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
)

// New returns a Driver over a new private in-memory lock table.
func New(opts ...Option) *Driver { return Wrap(memory.New(), opts...) }

// Wrap returns a Driver over inner, which it closes when it is closed.
func Wrap(inner driver.Driver, opts ...Option) *Driver {
	d := &Driver{inner: inner, prefix: "zerotal_lock:", released: make(chan struct{}), delays: map[Op]time.Duration{}}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Expire makes key's current lock vanish from the backend now, as a TTL
// that passed on the server, a restart without persistence or a failover
// would: the holder's next refresh finds it gone (lock.LostGone), and a
// waiter may take the key.
func (d *Driver) Expire(key string) error {
	err := d.inner.ForceRelease(context.Background(), d.prefix+key)
	d.notify()
	return err
}

// Steal makes another owner take key now, for ttl, as a holder that took
// over an expired lock would: the previous holder's next refresh finds it
// held by someone else (lock.LostTakenOver). It reports false when a waiter
// queued on the key got it first, which the holder sees the same way. The
// thief never releases: Expire the key to free it.
func (d *Driver) Steal(key string, ttl time.Duration) (bool, error) {
	ctx := context.Background()
	full := d.prefix + key
	if err := d.inner.ForceRelease(ctx, full); err != nil {
		return false, err
	}
	return d.inner.Acquire(ctx, full, "10c7e57000000000000000000000000f", ttl)
}

// FailNext makes the next n calls of op (AnyOp: of any operation) fail with
// err, or with ErrInjected when err is nil, without reaching the backend.
func (d *Driver) FailNext(op Op, n int, err error) {
	if err == nil {
		err = ErrInjected
	}
	d.mu.Lock()
	d.faults = append(d.faults, fault{op: op, n: n, err: err})
	d.mu.Unlock()
}

// HangNext makes the next n calls of op (AnyOp: of any operation) wait
// until their context ends, as a backend that accepted the call and never
// answered, and return the context's error.
func (d *Driver) HangNext(op Op, n int) {
	d.mu.Lock()
	d.faults = append(d.faults, fault{op: op, n: n, hang: true})
	d.mu.Unlock()
}

// Delay makes every later call of op (AnyOp: of any operation) wait dur
// before it reaches the backend, or until its context ends. Delay(op, 0)
// removes it.
func (d *Driver) Delay(op Op, dur time.Duration) {
	d.mu.Lock()
	d.delays[op] = dur
	d.mu.Unlock()
}

// Partition cuts the backend off: every call fails with ErrPartitioned
// until Heal.
func (d *Driver) Partition() {
	d.mu.Lock()
	d.partitioned = true
	d.mu.Unlock()
}

// Heal ends a partition and forgets the failures, hangs and delays still
// pending.
func (d *Driver) Heal() {
	d.mu.Lock()
	d.partitioned = false
	d.faults = nil
	clear(d.delays)
	d.mu.Unlock()
}

// Calls returns the driver calls made so far, in order.
func (d *Driver) Calls() []Call {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// CallsOf returns the calls of op made so far, in order.
func (d *Driver) CallsOf(op Op) []Call {
	var out []Call
	for _, c := range d.Calls() {
		if c.Op == op {
			out = append(out, c)
		}
	}
	return out
}

// before runs what the test asked for before a call of op reaches the
// backend: a delay, a partition, an injected failure or hang. A non-nil
// error is the call's result.
func (d *Driver) before(ctx context.Context, op Op) error {
	d.mu.Lock()
	delay, ok := d.delays[op]
	if !ok {
		delay = d.delays[AnyOp]
	}
	var injected *fault
	if !d.partitioned {
		for i := range d.faults {
			if f := &d.faults[i]; f.n > 0 && (f.op == op || f.op == AnyOp) {
				f.n--
				c := *f
				injected = &c
				break
			}
		}
	}
	partitioned := d.partitioned
	d.mu.Unlock()
	if delay > 0 {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	switch {
	case partitioned:
		return ErrPartitioned
	case injected != nil && injected.hang:
		<-ctx.Done()
		return ctx.Err()
	case injected != nil:
		return injected.err
	}
	return nil
}

// record notes a call and returns its results.
func (d *Driver) record(op Op, key string, ok bool, err error) (bool, error) {
	d.mu.Lock()
	d.calls = append(d.calls, Call{Op: op, Key: strings.TrimPrefix(key, d.prefix), OK: ok, Err: err})
	d.mu.Unlock()
	return ok, err
}

// notify tells waiters and subscribers that a key may have become free.
func (d *Driver) notify() {
	d.mu.Lock()
	close(d.released)
	d.released = make(chan struct{})
	d.mu.Unlock()
}

// Acquire is driver.Driver's Acquire, under the test's control.
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := d.AcquireFenced(ctx, key, owner, ttl)
	return ok, err
}

// AcquireFenced is driver.Fencer's AcquireFenced, under the test's control;
// the token is 0 when the wrapped driver mints none.
func (d *Driver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	if err := d.before(ctx, Acquire); err != nil {
		_, err = d.record(Acquire, key, false, err)
		return 0, false, err
	}
	var token uint64
	var ok bool
	var err error
	if f, isFencer := d.inner.(driver.Fencer); isFencer {
		token, ok, err = f.AcquireFenced(ctx, key, owner, ttl)
	} else {
		ok, err = d.inner.Acquire(ctx, key, owner, ttl)
	}
	ok, err = d.record(Acquire, key, ok, err)
	return token, ok, err
}

// AcquireWait is driver.Waiter's AcquireWait, under the test's control.
// Over a driver that cannot wait, it retries Acquire whenever a key may
// have become free: on the wrapped driver's notices (driver.Notifier), on
// the kit's own releases, and at the holder's expiry as Inspect tells it.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.before(ctx, AcquireWait); err != nil {
		_, err = d.record(AcquireWait, key, false, err)
		return 0, err
	}
	if w, ok := d.inner.(driver.Waiter); ok {
		token, err := w.AcquireWait(ctx, key, owner, ttl)
		_, err = d.record(AcquireWait, key, err == nil, err)
		return token, err
	}
	token, err := d.emulateWait(ctx, key, owner, ttl)
	_, err = d.record(AcquireWait, key, err == nil, err)
	return token, err
}

func (d *Driver) emulateWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	var notices <-chan struct{}
	if n, ok := d.inner.(driver.Notifier); ok {
		ch, cancel := n.Subscribe(key)
		defer cancel()
		notices = ch
	}
	for {
		d.mu.Lock()
		released := d.released
		d.mu.Unlock()
		var token uint64
		var ok bool
		var err error
		if f, isFencer := d.inner.(driver.Fencer); isFencer {
			token, ok, err = f.AcquireFenced(ctx, key, owner, ttl)
		} else {
			ok, err = d.inner.Acquire(ctx, key, owner, ttl)
		}
		if err != nil || ok {
			return token, err
		}
		var expiry <-chan time.Time
		var timer *time.Timer
		if in, isInspector := d.inner.(driver.Inspector); isInspector {
			if h, held, err := in.Inspect(ctx, key); err == nil && held && !h.ExpiresAt.IsZero() {
				timer = time.NewTimer(time.Until(h.ExpiresAt))
				expiry = timer.C
			}
		}
		select {
		case <-ctx.Done():
		case <-notices:
		case <-released:
		case <-expiry:
		}
		if timer != nil {
			timer.Stop()
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
	}
}

// Extend is driver.Extender's Extend, under the test's control; over a
// driver without Extend it is the owner-guarded Acquire the engine would
// make.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.before(ctx, Extend); err != nil {
		return d.record(Extend, key, false, err)
	}
	if e, ok := d.inner.(driver.Extender); ok {
		ok, err := e.Extend(ctx, key, owner, ttl)
		return d.record(Extend, key, ok, err)
	}
	ok, err := d.inner.Acquire(ctx, key, owner, ttl)
	return d.record(Extend, key, ok, err)
}

// Release is driver.Driver's Release, under the test's control.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.before(ctx, Release); err != nil {
		return d.record(Release, key, false, err)
	}
	ok, err := d.inner.Release(ctx, key, owner)
	if ok {
		d.notify()
	}
	return d.record(Release, key, ok, err)
}

// ForceRelease is driver.Driver's ForceRelease, under the test's control.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.before(ctx, ForceRelease); err != nil {
		_, err = d.record(ForceRelease, key, false, err)
		return err
	}
	err := d.inner.ForceRelease(ctx, key)
	d.notify()
	_, err = d.record(ForceRelease, key, err == nil, err)
	return err
}

// Exists is driver.Driver's Exists, under the test's control.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.before(ctx, Exists); err != nil {
		return d.record(Exists, key, false, err)
	}
	ok, err := d.inner.Exists(ctx, key)
	return d.record(Exists, key, ok, err)
}

// Inspect is driver.Inspector's Inspect, under the test's control; over a
// driver without Inspect it says only whether the key is held.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if err := d.before(ctx, Inspect); err != nil {
		_, err = d.record(Inspect, key, false, err)
		return driver.Holder{}, false, err
	}
	if in, ok := d.inner.(driver.Inspector); ok {
		h, held, err := in.Inspect(ctx, key)
		_, err = d.record(Inspect, key, held, err)
		return h, held, err
	}
	held, err := d.inner.Exists(ctx, key)
	_, err = d.record(Inspect, key, held, err)
	return driver.Holder{}, held, err
}

// Close closes the wrapped driver.
func (d *Driver) Close() error { return d.inner.Close() }
