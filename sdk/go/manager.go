package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/driver"
)

// managerState is what a Manager holds (api_gen.go declares the type, with
// its doc; this file is its behaviour).
type managerState struct {
	d      driver.Driver
	prefix string
	pfxErr error     // a bad prefix, reported by every lock of this manager
	obs    *observer // nil when nobody observes

	// Optional driver capabilities, discovered once.
	extender  driver.Extender
	fencer    driver.Fencer
	waiter    driver.Waiter
	notifier  driver.Notifier
	inspector driver.Inspector

	// life is cancelled by Close with cause ErrClosed: waits select on it.
	life context.Context
	kill context.CancelCauseFunc

	// calls counts the calls that may touch the driver (see enter), so that
	// Close can wait for them before it releases and closes the driver: an
	// acquire granted while Close runs must still be able to give its key
	// back. idle is closed when the count drops to zero after Close began.
	calls    atomic.Int64
	idle     chan struct{}
	idleOnce sync.Once
	// cleanups counts the background releases of acquisitions whose outcome
	// was unknown (see cleanup), to bound them.
	cleanups atomic.Int64
	// releaseTicks gives the releases' contexts their Done without a timer
	// each (see detach.go); Close stops it.
	releaseTicks deadlineTicks

	mu      sync.Mutex
	closed  atomic.Bool               // set under mu; read without it on fast paths
	held    map[*ManagedLock]struct{} // locks this manager holds now, for Close
	sweepAt int                       // len(held) at which sweep runs next
	// closeDone is closed when the first Close has finished.
	closeDone chan struct{}
	wg        sync.WaitGroup // refreshers
	expiry    expiryQueue    // cancels work whose lock's client-side expiry passed
}

// newManager is New.
func newManager(d driver.Driver, opts []ManagerOption) *Manager {
	o := newManagerOptions(opts)
	m := newEngine(d, o.prefix)
	m.observe(o, driverName(d))
	return m
}

// observe sets up what o asks to be told, about a driver named driverName.
func (m *Manager) observe(o managerOptions, driverName string) {
	if o.logger != nil {
		o.observer = joinObservers(o.observer, logObserver(o.logger))
	}
	m.obs = newObserver(o.observer, driverName)
}

// newEngine returns a Manager that takes locks on d, prepending prefix to
// every key at the driver boundary. A nil d gives a Manager whose every call
// fails with an invalid argument.
func newEngine(d driver.Driver, prefix string) *Manager {
	life, kill := context.WithCancelCause(context.Background())
	m := &Manager{managerState{
		d:         d,
		prefix:    prefix,
		pfxErr:    validatePrefix(prefix),
		life:      life,
		kill:      kill,
		idle:      make(chan struct{}),
		held:      make(map[*ManagedLock]struct{}),
		sweepAt:   minSweep,
		closeDone: make(chan struct{}),
	}}
	if d == nil {
		m.pfxErr = &InvalidArgumentError{Field: "driver", Reason: "must not be nil"}
		return m
	}
	m.extender, _ = d.(driver.Extender)
	m.fencer, _ = d.(driver.Fencer)
	m.waiter, _ = d.(driver.Waiter)
	m.notifier, _ = d.(driver.Notifier)
	m.inspector, _ = d.(driver.Inspector)
	return m
}

// broken returns a Manager whose every call fails with err: what Default
// gives when the environment names a manager that cannot be opened.
func broken(err error) *Manager {
	m := newEngine(nil, "")
	m.pfxErr = err
	return m
}

// errNoManager is what a nil or zero Manager answers.
var errNoManager = &InvalidArgumentError{Field: "Manager", Reason: "is nil or zero; use one made by Open or New"}

// try is Try.
func (m *Manager) try(ctx context.Context, key string, ttl time.Duration, fn func(context.Context) error, opts []Option) error {
	return m.newLock(key, ttl).run(ctx, OpTry, opts, fn)
}

// block is Block.
func (m *Manager) block(ctx context.Context, key string, ttl time.Duration, fn func(context.Context) error, opts []Option) error {
	return m.newLock(key, ttl).run(ctx, OpBlock, opts, fn)
}

// newLock is Make. An invalid key or TTL is reported by the handle's
// methods, so that Make itself cannot fail.
func (m *Manager) newLock(key string, ttl time.Duration) *ManagedLock {
	if m == nil || m.life == nil {
		return &ManagedLock{managedLockState{m: broken(errNoManager), err: errNoManager, runIndex: -1}}
	}
	l := &ManagedLock{managedLockState{m: m, userKey: key, ttl: ttl, runIndex: -1}}
	if m.obs != nil {
		l.watch = &watch{}
	}
	switch {
	case m.pfxErr != nil:
		l.err = m.pfxErr
	default:
		if l.err = validateKey(key); l.err == nil {
			l.err = validateTTL(ttl)
		}
	}
	if l.err == nil {
		l.driverKey = m.prefix + key
	}
	return l
}

// closeWait bounds how long Close waits for calls in flight (an attempt on a
// backend that does not answer, say) before it closes the driver under them.
const closeWait = releaseTimeout

// close is Close. It waits (boundedly) for the calls in flight to end before
// it releases and closes the driver, so that a key granted to one of them
// meanwhile can still be given back.
func (m *Manager) close() error {
	if m == nil || m.life == nil {
		return errNoManager
	}
	if m.d == nil {
		return m.pfxErr // a broken manager has nothing to close
	}
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		<-m.closeDone // a concurrent Close returns once the first is done
		return nil
	}
	m.closed.Store(true)
	defer close(m.closeDone)
	m.mu.Unlock()

	m.kill(ErrClosed)
	for _, l := range m.snapshot() {
		lost := l.lostError(LostClosed, ErrClosed)
		m.obs.lostInRun(l, lost)
		l.stopRun(lost)
	}
	m.wg.Wait()
	m.waitIdle()
	m.expiry.close()

	// Calls that ended meanwhile have tracked what they were granted or
	// given it back, so the snapshot taken now is complete.
	var errs []error
	for _, l := range m.snapshot() {
		if err := l.releaseForClose(); err != nil {
			errs = append(errs, err)
		}
	}
	if m.d != nil {
		if err := m.d.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	m.releaseTicks.stop()
	return errors.Join(errs...)
}

// snapshot lists the locks the manager holds.
func (m *Manager) snapshot() []*ManagedLock {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := make([]*ManagedLock, 0, len(m.held))
	for l := range m.held {
		held = append(held, l)
	}
	return held
}

// enter counts a call that may touch the driver, unless the manager is
// closed; the caller calls leave when done. The order of the two atomics
// is what makes Close safe: Close sets closed and then reads calls, enter
// adds to calls and then reads closed, so either Close sees the call and
// waits for it, or the call sees closed and backs out.
func (m *Manager) enter() bool {
	m.calls.Add(1)
	if m.closed.Load() {
		m.leave()
		return false
	}
	return true
}

// leave ends what enter began, waking Close after the last call.
func (m *Manager) leave() {
	if m.calls.Add(-1) == 0 && m.closed.Load() {
		m.idleOnce.Do(func() { close(m.idle) })
	}
}

// waitIdle waits, up to closeWait, for the calls counted by enter. Close
// has cancelled every wait, so what is left are single attempts, which end
// with their contexts or the driver's own timeouts.
func (m *Manager) waitIdle() {
	if m.calls.Load() == 0 {
		return
	}
	t := time.NewTimer(closeWait)
	defer t.Stop()
	select {
	case <-m.idle:
	case <-t.C:
	}
}

// maxCleanups bounds the background releases in flight: beyond it (a
// backend that fails every call, say), an acquisition of unknown outcome is
// left to its TTL rather than piling up goroutines.
const maxCleanups = 64

// cleanup gives back, in the background and within releaseTimeout, an
// acquisition whose outcome is unknown: the attempt failed or was cancelled
// after it may have reached the backend, so the key may be held under owner,
// a token nobody else knows. The caller is inside enter, which keeps the
// driver open until the cleanup has been counted in.
func (m *Manager) cleanup(full, owner string) {
	if m.cleanups.Add(1) > maxCleanups {
		m.cleanups.Add(-1)
		return
	}
	m.calls.Add(1)
	go func() {
		defer m.leave()
		defer m.cleanups.Add(-1)
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		_, _ = m.d.Release(ctx, full, owner)
		cancel()
	}()
}

// startRefresher counts a refresher in, unless the manager is closed: under
// m.mu, so Close's wait for refreshers never races with a new one.
func (m *Manager) startRefresher() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return false
	}
	m.wg.Add(1)
	return true
}

// track records that l is held, so Close can release it. It fails when the
// manager is closed, which closes the gap between an acquire that was in
// flight and Close's snapshot.
func (m *Manager) track(l *ManagedLock) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed.Load() {
		return false
	}
	m.held[l] = struct{}{}
	if len(m.held) >= m.sweepAt {
		m.sweep()
	}
	return true
}

// sweep forgets handles whose client-side expiry has passed: a handle that
// was acquired and left to expire (a legitimate way to throttle) must not
// stay in the map forever. Sweeping when the map has doubled since the last
// sweep keeps the cost constant per track. The caller holds m.mu.
func (m *Manager) sweep() {
	now := time.Now()
	for l := range m.held {
		l.mu.Lock()
		gone := !l.held || !now.Before(l.expires)
		l.mu.Unlock()
		if gone {
			delete(m.held, l)
		}
	}
	m.sweepAt = max(minSweep, 2*len(m.held))
}

// minSweep is the size of the held map below which it is never swept.
const minSweep = 64

func (m *Manager) untrack(l *ManagedLock) {
	m.mu.Lock()
	delete(m.held, l)
	m.mu.Unlock()
}

// driverErr wraps a driver failure of a call on ctx for the caller.
// Failures that happen because Close closed the driver under a call in
// flight report ErrClosed.
func (m *Manager) driverErr(ctx context.Context, op, key string, err error) error {
	m.obs.backendError(ctx, key, op, err)
	if m.closed.Load() {
		return errors.Join(ErrClosed, &DriverError{Op: op, Key: key, Err: err})
	}
	return &DriverError{Op: op, Key: key, Err: err}
}

// acquire makes one attempt, through AcquireFenced when the driver has it.
func (m *Manager) acquire(ctx context.Context, full, owner string, ttl time.Duration) (uint64, bool, error) {
	if m.fencer != nil {
		return m.fencer.AcquireFenced(ctx, full, owner, ttl)
	}
	ok, err := m.d.Acquire(ctx, full, owner, ttl)
	return 0, ok, err
}

func (m *Manager) inspect(ctx context.Context, key, full string) (driver.Holder, bool, error) {
	if m.inspector == nil {
		return driver.Holder{}, false, &DriverError{Op: "inspect", Key: key, Err: errNoInspector(m.d)}
	}
	h, ok, err := m.inspector.Inspect(ctx, full)
	if err != nil {
		return driver.Holder{}, false, m.driverErr(ctx, "inspect", key, err)
	}
	return h, ok, nil
}
