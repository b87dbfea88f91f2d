package conformance_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
)

// A bug is a deliberate defect the reference driver can be built with, to
// prove that the kit catches it.
type bug string

const (
	bugNone                bug = ""
	bugReleaseUnguarded    bug = "release-unguarded"     // Release frees the key whoever asks
	bugTTLNeverExpires     bug = "ttl-never-expires"     // locks live until released
	bugAcquireNotAtomic    bug = "acquire-not-atomic"    // check-then-set with a yield in between
	bugExtendAnyOwner      bug = "extend-any-owner"      // Extend prolongs whoever holds the key
	bugExtendTakesFree     bug = "extend-takes-free"     // Extend on a free key takes it
	bugExistsIgnoresExpiry bug = "exists-ignores-expiry" // Exists is true for an expired lock
	bugTokensRepeat        bug = "tokens-repeat"         // per-key counter, forgotten on release
	bugReacquireKeepsTTL   bug = "reacquire-keeps-ttl"   // same-owner Acquire leaves the TTL alone
	bugReacquireNewToken   bug = "reacquire-new-token"   // same-owner Acquire mints a new token
	bugTTLInSeconds        bug = "ttl-in-seconds"        // TTLs rounded up to whole seconds
	bugKeysFoldCase        bug = "keys-fold-case"        // "A" and "a" are one key
	bugKeysTruncated       bug = "keys-truncated"        // keys cut to 255 bytes, like a file name
	bugWaitersLIFO         bug = "waiters-lifo"          // the latest waiter is served first
	bugCloseIgnored        bug = "close-ignored"         // a closed instance keeps working
	bugExistsBlocks        bug = "exists-blocks"         // Exists returns only when its context ends
	bugExistsHangs         bug = "exists-hangs"          // Exists ignores its context and never returns
)

var errRefClosed = errors.New("refdriver: closed")

// refBackend is an in-process lock table that refDriver instances share:
// the simplest correct backend, a mutex and a map, unless built with a bug.
type refBackend struct {
	bug    bug
	mu     sync.Mutex
	locks  map[string]*refLock
	queues map[string][]chan struct{} // AcquireWait callers per key, in service order
	subs   map[string]map[*refSub]struct{}
	minted uint64 // the backend-wide token counter
}

type refLock struct {
	owner    string
	token    uint64
	acquired time.Time
	expires  time.Time
}

type refSub struct{ notices chan struct{} }

func newRefBackend(b bug) *refBackend {
	return &refBackend{
		bug:    b,
		locks:  make(map[string]*refLock),
		queues: make(map[string][]chan struct{}),
		subs:   make(map[string]map[*refSub]struct{}),
	}
}

// refDriver is one instance on a refBackend.
type refDriver struct {
	b         *refBackend
	closed    chan struct{}
	closeOnce sync.Once
}

var (
	_ driver.Driver    = (*refDriver)(nil)
	_ driver.Extender  = (*refDriver)(nil)
	_ driver.Fencer    = (*refDriver)(nil)
	_ driver.Waiter    = (*refDriver)(nil)
	_ driver.Notifier  = (*refDriver)(nil)
	_ driver.Inspector = (*refDriver)(nil)
)

func (b *refBackend) open() *refDriver {
	return &refDriver{b: b, closed: make(chan struct{})}
}

// check returns the error a call must fail with before it starts, if any.
func (d *refDriver) check(ctx context.Context) error {
	if d.b.bug != bugCloseIgnored {
		select {
		case <-d.closed:
			return errRefClosed
		default:
		}
	}
	return ctx.Err()
}

// canon maps a caller's key to the table's key.
func (b *refBackend) canon(key string) string {
	switch {
	case b.bug == bugKeysFoldCase:
		return strings.ToLower(key)
	case b.bug == bugKeysTruncated && len(key) > 255:
		return key[:255]
	}
	return key
}

func (b *refBackend) ttl(ttl time.Duration) time.Duration {
	if b.bug == bugTTLInSeconds {
		return (ttl + time.Second - 1).Truncate(time.Second)
	}
	return ttl
}

// live reports whether l is a lock still held at now.
func (b *refBackend) live(l *refLock, now time.Time) bool {
	return l != nil && (b.bug == bugTTLNeverExpires || now.Before(l.expires))
}

// mint returns the token for a new acquisition of a key whose previous entry
// is prev (nil if none).
func (b *refBackend) mint(prev *refLock) uint64 {
	if b.bug == bugTokensRepeat {
		if prev == nil {
			return 1
		}
		return prev.token + 1
	}
	b.minted++
	return b.minted
}

// acquireLocked is Acquire with b.mu held.
func (b *refBackend) acquireLocked(key, owner string, ttl time.Duration, now time.Time) (uint64, bool) {
	l := b.locks[key]
	if b.live(l, now) {
		if l.owner != owner {
			return 0, false
		}
		if b.bug != bugReacquireKeepsTTL {
			l.expires = now.Add(b.ttl(ttl))
		}
		if b.bug == bugReacquireNewToken {
			l.token = b.mint(l)
		}
		return l.token, true
	}
	b.locks[key] = &refLock{owner: owner, token: b.mint(l), acquired: now, expires: now.Add(b.ttl(ttl))}
	return b.locks[key].token, true
}

// freedLocked tells subscribers and the first waiter that key is free.
func (b *refBackend) freedLocked(key string) {
	delete(b.locks, key)
	for s := range b.subs[key] {
		select {
		case s.notices <- struct{}{}:
		default:
		}
	}
	if q := b.queues[key]; len(q) > 0 {
		wake(q[0])
	}
}

func wake(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

func (d *refDriver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := d.AcquireFenced(ctx, key, owner, ttl)
	return ok, err
}

func (d *refDriver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	if err := d.check(ctx); err != nil {
		return 0, false, err
	}
	b, key := d.b, d.b.canon(key)
	if b.bug == bugAcquireNotAtomic {
		b.mu.Lock()
		l := b.locks[key]
		free := !b.live(l, time.Now()) || l.owner == owner
		b.mu.Unlock()
		if !free {
			return 0, false, nil
		}
		runtime.Gosched() // the window between check and set that makes this bug
		b.mu.Lock()
		defer b.mu.Unlock()
		now := time.Now()
		b.locks[key] = &refLock{owner: owner, token: b.mint(l), acquired: now, expires: now.Add(b.ttl(ttl))}
		return b.locks[key].token, true, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	token, ok := b.acquireLocked(key, owner, ttl, time.Now())
	return token, ok, nil
}

func (d *refDriver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, err
	}
	b, key := d.b, d.b.canon(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.locks[key]
	if !b.live(l, time.Now()) || (l.owner != owner && b.bug != bugReleaseUnguarded) {
		return false, nil
	}
	b.freedLocked(key)
	return true, nil
}

func (d *refDriver) ForceRelease(ctx context.Context, key string) error {
	if err := d.check(ctx); err != nil {
		return err
	}
	b, key := d.b, d.b.canon(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.locks[key]; ok {
		b.freedLocked(key)
	}
	return nil
}

func (d *refDriver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, err
	}
	switch d.b.bug {
	case bugExistsBlocks:
		<-ctx.Done()
		return false, ctx.Err()
	case bugExistsHangs:
		<-make(chan struct{})
	}
	b, key := d.b, d.b.canon(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.locks[key]
	if b.bug == bugExistsIgnoresExpiry {
		return l != nil, nil
	}
	return b.live(l, time.Now()), nil
}

func (d *refDriver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.check(ctx); err != nil {
		return false, err
	}
	b, key := d.b, d.b.canon(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	l := b.locks[key]
	switch {
	case !b.live(l, now):
		if b.bug == bugExtendTakesFree {
			_, ok := b.acquireLocked(key, owner, ttl, now)
			return ok, nil
		}
		return false, nil
	case l.owner != owner && b.bug != bugExtendAnyOwner:
		return false, nil
	}
	l.expires = now.Add(b.ttl(ttl))
	return true, nil
}

// AcquireWait queues the caller and takes the key when the caller is first
// in line and the key is free, woken by a release or by the holder's expiry.
func (d *refDriver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.check(ctx); err != nil {
		return 0, err
	}
	b, key := d.b, d.b.canon(key)
	me := make(chan struct{}, 1)
	b.mu.Lock()
	if b.bug == bugWaitersLIFO {
		b.queues[key] = append([]chan struct{}{me}, b.queues[key]...)
	} else {
		b.queues[key] = append(b.queues[key], me)
	}
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		q := b.queues[key]
		i := slices.Index(q, me)
		q = slices.Delete(q, i, i+1)
		if len(q) == 0 {
			delete(b.queues, key)
			return
		}
		b.queues[key] = q
		if i == 0 {
			wake(q[0]) // the next in line may take a free key now
		}
	}()
	for {
		b.mu.Lock()
		now := time.Now()
		first := b.queues[key][0] == me
		if first {
			if token, ok := b.acquireLocked(key, owner, ttl, now); ok {
				b.mu.Unlock()
				return token, nil
			}
		}
		// Only the first in line needs to see the holder expire.
		expiry := time.NewTimer(time.Hour)
		if l := b.locks[key]; first && b.live(l, now) {
			expiry.Reset(max(l.expires.Sub(now), time.Millisecond))
		}
		b.mu.Unlock()
		err := d.waitTurn(ctx, me, expiry.C)
		expiry.Stop()
		if err != nil {
			return 0, err
		}
	}
}

// waitTurn blocks until the caller is woken or the holder expires, and
// returns an error if ctx ends or the instance closes first.
func (d *refDriver) waitTurn(ctx context.Context, me chan struct{}, expiry <-chan time.Time) error {
	closed := d.closed
	if d.b.bug == bugCloseIgnored {
		closed = nil
	}
	select {
	case <-me:
	case <-expiry:
	case <-ctx.Done():
		return ctx.Err()
	case <-closed:
		return errRefClosed
	}
	return nil
}

func (d *refDriver) Subscribe(key string) (<-chan struct{}, func()) {
	b, key := d.b, d.b.canon(key)
	s := &refSub{notices: make(chan struct{}, 1)}
	b.mu.Lock()
	if b.subs[key] == nil {
		b.subs[key] = make(map[*refSub]struct{})
	}
	b.subs[key][s] = struct{}{}
	b.mu.Unlock()
	var once sync.Once
	return s.notices, func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			delete(b.subs[key], s)
			if len(b.subs[key]) == 0 {
				delete(b.subs, key)
			}
		})
	}
}

func (d *refDriver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if err := d.check(ctx); err != nil {
		return driver.Holder{}, false, err
	}
	b, key := d.b, d.b.canon(key)
	b.mu.Lock()
	defer b.mu.Unlock()
	l := b.locks[key]
	if !b.live(l, time.Now()) {
		return driver.Holder{}, false, nil
	}
	return driver.Holder{Owner: l.owner, Token: l.token, AcquiredAt: l.acquired, ExpiresAt: l.expires, PID: os.Getpid()}, true, nil
}

func (d *refDriver) Close() error {
	d.closeOnce.Do(func() { close(d.closed) })
	return nil
}
