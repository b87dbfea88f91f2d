package lock

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// fakeDriver is a minimal in-process driver with fault injection, so the
// engine can be tested without depending on a real driver module.
type fakeDriver struct {
	mu     sync.Mutex
	locks  map[string]fakeEntry
	next   uint64
	closed bool
	subs   map[string][]chan struct{}

	calls      atomic.Int64 // every driver call
	failAll    atomic.Pointer[error]
	extendLost atomic.Bool // Extend answers "not held"
	// stall makes Acquire wait for its ctx to end, as a backend that
	// accepts the call and never answers.
	stall atomic.Bool
	// grantThenCancel makes Acquire take the key and then report its
	// ctx's error, as a backend whose commit raced a cancellation.
	grantThenCancel atomic.Bool
}

type fakeEntry struct {
	owner   string
	token   uint64
	expires time.Time
}

func newFake() *fakeDriver {
	return &fakeDriver{locks: map[string]fakeEntry{}, subs: map[string][]chan struct{}{}}
}

func (f *fakeDriver) fault() error {
	f.calls.Add(1)
	if p := f.failAll.Load(); p != nil {
		return *p
	}
	if f.closed {
		return errors.New("fake: closed")
	}
	return nil
}

func (f *fakeDriver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	if f.stall.Load() {
		f.calls.Add(1)
		<-ctx.Done()
		return 0, false, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fault(); err != nil {
		return 0, false, err
	}
	if f.grantThenCancel.Load() {
		f.next++
		f.locks[key] = fakeEntry{owner: owner, token: f.next, expires: time.Now().Add(ttl)}
		return 0, false, context.Canceled
	}
	e, ok := f.locks[key]
	now := time.Now()
	if ok && now.Before(e.expires) && e.owner != owner {
		return 0, false, nil
	}
	if !ok || e.owner != owner || !now.Before(e.expires) {
		f.next++
		e = fakeEntry{owner: owner, token: f.next}
	}
	e.expires = now.Add(ttl)
	f.locks[key] = e
	return e.token, true, nil
}

func (f *fakeDriver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	_, ok, err := f.AcquireFenced(ctx, key, owner, ttl)
	return ok, err
}

func (f *fakeDriver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fault(); err != nil {
		return false, err
	}
	e, ok := f.locks[key]
	if !ok || e.owner != owner || !time.Now().Before(e.expires) || f.extendLost.Load() {
		return false, nil
	}
	e.expires = time.Now().Add(ttl)
	f.locks[key] = e
	return true, nil
}

func (f *fakeDriver) Release(ctx context.Context, key, owner string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fault(); err != nil {
		return false, err
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	e, ok := f.locks[key]
	if !ok || e.owner != owner || !time.Now().Before(e.expires) {
		return false, nil
	}
	delete(f.locks, key)
	f.notify(key)
	return true, nil
}

func (f *fakeDriver) ForceRelease(ctx context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fault(); err != nil {
		return err
	}
	delete(f.locks, key)
	f.notify(key)
	return nil
}

func (f *fakeDriver) Exists(ctx context.Context, key string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.fault(); err != nil {
		return false, err
	}
	e, ok := f.locks[key]
	return ok && time.Now().Before(e.expires), nil
}

func (f *fakeDriver) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeDriver) isClosed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closed
}

func (f *fakeDriver) Subscribe(key string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.subs[key] = append(f.subs[key], ch)
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		subs := f.subs[key]
		for i, c := range subs {
			if c == ch {
				f.subs[key] = append(subs[:i], subs[i+1:]...)
				break
			}
		}
	}
}

// notify runs with f.mu held.
func (f *fakeDriver) notify(key string) {
	for _, ch := range f.subs[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// holds reports whether key is held by owner now.
func (f *fakeDriver) holds(key, owner string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.locks[key]
	return ok && e.owner == owner && time.Now().Before(e.expires)
}

// expireNow makes key's current holder expire.
func (f *fakeDriver) expireNow(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if e, ok := f.locks[key]; ok {
		e.expires = time.Now().Add(-time.Nanosecond)
		f.locks[key] = e
	}
}

// wipe forgets every lock, as a backend that restarted without persistence.
func (f *fakeDriver) wipe() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.locks)
}

// heldBy returns key's live holder, "" when it is free.
func (f *fakeDriver) heldBy(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.locks[key]
	if !ok || !time.Now().Before(e.expires) {
		return ""
	}
	return e.owner
}
