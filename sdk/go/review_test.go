package lock

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestANewAcquisitionAfterExpiryGetsAFreshOwner(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	l := m.newLock("k", 5*time.Millisecond)
	if ok, _ := l.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	first := l.Owner()
	for l.IsAcquired() {
		time.Sleep(time.Millisecond)
	}
	if ok, _ := l.Acquire(ctx); !ok {
		t.Fatal("re-acquire after expiry")
	}
	if l.Owner() == first {
		t.Fatal("a new acquisition after expiry reused the old owner token")
	}
}

func TestLostRunReturnsTheLostErrorItself(t *testing.T) {
	m, _ := newTestManager(t)
	err := m.newLock("k", 10*time.Millisecond).run(context.Background(), OpTry, nil, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	if _, ok := err.(*LostError); !ok {
		t.Fatalf("err is %T (%v); want *LostError itself", err, err)
	}
}

func TestRefreshByHandInsideFnMovesItsDeadline(t *testing.T) {
	// In a synctest bubble: a refresher stalled by a loaded machine
	// must not lose a lock whose TTL is milliseconds of real time.
	synctest.Test(t, func(t *testing.T) {
		m, _ := newTestManager(t)
		const ttl = 40 * time.Millisecond
		l := m.newLock("k", ttl)
		err := l.run(context.Background(), OpTry, nil, func(ctx context.Context) error {
			for range 6 {
				time.Sleep(ttl / 4)
				if ok, err := l.Refresh(context.Background()); !ok || err != nil {
					return errors.New("refresh failed")
				}
			}
			return context.Cause(ctx) // nil unless fn's context ended
		})
		if err != nil {
			t.Fatalf("Run = %v; refreshing by hand must keep fn's context alive", err)
		}
	})
}

func TestCallersCtxErrorComesBackAsItself(t *testing.T) {
	m, _ := newTestManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.newLock("k", time.Second).run(ctx, OpTry, nil, func(context.Context) error { return nil })
	if err != context.Canceled {
		t.Fatalf("err = %v (%T); want context.Canceled itself", err, err)
	}
}

func TestHandlesLeftToExpireAreNotTrackedForever(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	for i := range 500 {
		if ok, _ := m.newLock(strings.Repeat("x", 1+i%7)+string(rune('a'+i%26))+time.Now().String(), time.Millisecond).Acquire(ctx); !ok {
			t.Fatal("acquire")
		}
	}
	time.Sleep(5 * time.Millisecond) // let every one of them pass its 1ms TTL
	for i := range 200 {
		_, _ = m.newLock("fresh"+string(rune('a'+i%26))+time.Now().String(), time.Millisecond).Acquire(ctx)
	}
	m.mu.Lock()
	n := len(m.held)
	m.mu.Unlock()
	if n > 300 {
		t.Fatalf("the manager still tracks %d handles, most of them long expired", n)
	}
}

func TestAKeyOf1KiBIsValidWhateverThePrefix(t *testing.T) {
	f := newFake()
	m := newEngine(f, strings.Repeat("p", maxPrefixLen))
	defer m.Close()
	if ok, err := m.newLock(strings.Repeat("k", maxKeyLen), time.Second).Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	bad := newEngine(f, strings.Repeat("p", maxPrefixLen+1))
	if _, err := bad.newLock("k", time.Second).Acquire(context.Background()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("prefix over %d bytes: err = %v", maxPrefixLen, err)
	}
}

// lateWaiter hands the key over just as the wait's context ends: the grant
// wins, as the memory driver documents.
type lateWaiter struct{ *fakeDriver }

func (w lateWaiter) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	<-ctx.Done()
	token, ok, err := w.AcquireFenced(context.Background(), key, owner, ttl)
	if err != nil || !ok {
		return 0, ctx.Err()
	}
	return token, nil
}

func TestAKeyHandedOverAtTheTimeoutIsNotABackendError(t *testing.T) {
	m := newEngine(lateWaiter{newFake()}, prefix)
	defer m.Close()
	err := m.newLock("k", 40*time.Millisecond).run(context.Background(), OpBlock, nil, func(context.Context) error { return nil })
	var de *DriverError
	if errors.As(err, &de) {
		t.Fatalf("err = %v: a key handed over at the timeout became a backend error", err)
	}
	if err != nil && !errors.Is(err, ErrNotAcquired) && !errors.Is(err, ErrLost) {
		t.Fatalf("err = %v; want success, ErrNotAcquired or ErrLost", err)
	}
}
