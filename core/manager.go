package core

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zerotal/lock/core/driver"
)

// Manager runs locks on one driver under one key prefix. It is safe for
// concurrent use. The zero value is not usable: call NewManager.
type Manager struct {
	d      driver.Driver
	prefix string
	pfxErr error // a bad prefix, reported by every lock of this manager

	// Optional driver capabilities, discovered once.
	extender  driver.Extender
	fencer    driver.Fencer
	waiter    driver.Waiter
	notifier  driver.Notifier
	inspector driver.Inspector

	// life is cancelled by Close with cause ErrClosed: waits select on it.
	life context.Context
	kill context.CancelCauseFunc

	mu      sync.Mutex
	closed  atomic.Bool        // set under mu; read without it on fast paths
	held    map[*Lock]struct{} // locks this manager holds now, for Close
	sweepAt int                // len(held) at which sweep runs next
	// closeDone is closed when the first Close has finished.
	closeDone chan struct{}
	wg        sync.WaitGroup // refreshers
	expiry    expiryQueue    // cancels work whose lock's client-side expiry passed
}

// NewManager returns a Manager that takes locks on d, prepending prefix to
// every key at the driver boundary.
func NewManager(d driver.Driver, prefix string) *Manager {
	life, kill := context.WithCancelCause(context.Background())
	m := &Manager{
		d:         d,
		prefix:    prefix,
		pfxErr:    validatePrefix(prefix),
		life:      life,
		kill:      kill,
		held:      make(map[*Lock]struct{}),
		sweepAt:   minSweep,
		closeDone: make(chan struct{}),
	}
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

// Driver returns the manager's driver.
func (m *Manager) Driver() driver.Driver { return m.d }

// Prefix returns the prefix prepended to every key at the driver boundary.
func (m *Manager) Prefix() string { return m.prefix }

// NewLock returns a handle on key with the given TTL. It does not acquire
// anything. An invalid key or TTL is reported by the handle's methods, so
// that NewLock itself cannot fail.
func (m *Manager) NewLock(key string, ttl time.Duration) *Lock {
	l := &Lock{m: m, key: key, ttl: ttl, runIndex: -1}
	switch {
	case m.pfxErr != nil:
		l.err = m.pfxErr
	default:
		if l.err = validateKey(key); l.err == nil {
			l.err = validateTTL(ttl)
		}
	}
	if l.err == nil {
		l.full = m.prefix + key
	}
	return l
}

// Close stops every refresher, cancels the work of running Run calls with
// cause ErrClosed, releases what the manager still holds (best effort: a lock
// whose release fails expires by its TTL), and closes the driver. Blocked
// waits return ErrClosed. Close is idempotent; afterwards every call fails
// with an error matching ErrClosed.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed.Load() {
		m.mu.Unlock()
		<-m.closeDone // a concurrent Close returns once the first is done
		return nil
	}
	m.closed.Store(true)
	defer close(m.closeDone)
	held := make([]*Lock, 0, len(m.held))
	for l := range m.held {
		held = append(held, l)
	}
	m.mu.Unlock()

	m.kill(ErrClosed)
	for _, l := range held {
		l.stopRun(ErrClosed)
	}
	m.wg.Wait()
	m.expiry.close()

	var errs []error
	for _, l := range held {
		if err := l.releaseForClose(); err != nil {
			errs = append(errs, err)
		}
	}
	if m.d != nil {
		if err := m.d.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
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
func (m *Manager) track(l *Lock) bool {
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

func (m *Manager) untrack(l *Lock) {
	m.mu.Lock()
	delete(m.held, l)
	m.mu.Unlock()
}

// driverErr wraps a driver failure for the caller. Failures that happen
// because Close closed the driver under a call in flight report ErrClosed.
func (m *Manager) driverErr(op, key string, err error) error {
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
