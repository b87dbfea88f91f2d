package core

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestANewAcquisitionAfterExpiryGetsAFreshOwner(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	l := m.NewLock("k", 5*time.Millisecond)
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
	err := m.NewLock("k", 10*time.Millisecond).Run(context.Background(), ModeTry, Options{}, func(ctx context.Context) error {
		<-ctx.Done()
		return nil
	})
	if _, ok := err.(*LostError); !ok {
		t.Fatalf("err is %T (%v); want *LostError itself", err, err)
	}
}

func TestRefreshByHandInsideFnMovesItsDeadline(t *testing.T) {
	m, _ := newTestManager(t)
	const ttl = 40 * time.Millisecond
	l := m.NewLock("k", ttl)
	err := l.Run(context.Background(), ModeTry, Options{}, func(ctx context.Context) error {
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
}

func TestCallersCtxErrorComesBackAsItself(t *testing.T) {
	m, _ := newTestManager(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := m.NewLock("k", time.Second).Run(ctx, ModeTry, Options{}, func(context.Context) error { return nil })
	if err != context.Canceled {
		t.Fatalf("err = %v (%T); want context.Canceled itself", err, err)
	}
}

func TestHandlesLeftToExpireAreNotTrackedForever(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	for i := range 500 {
		if ok, _ := m.NewLock(strings.Repeat("x", 1+i%7)+string(rune('a'+i%26))+time.Now().String(), time.Millisecond).Acquire(ctx); !ok {
			t.Fatal("acquire")
		}
	}
	time.Sleep(5 * time.Millisecond) // let every one of them pass its 1ms TTL
	for i := range 200 {
		_, _ = m.NewLock("fresh"+string(rune('a'+i%26))+time.Now().String(), time.Millisecond).Acquire(ctx)
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
	m := NewManager(f, strings.Repeat("p", MaxPrefixLen))
	defer m.Close()
	if ok, err := m.NewLock(strings.Repeat("k", MaxKeyLen), time.Second).Acquire(context.Background()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	bad := NewManager(f, strings.Repeat("p", MaxPrefixLen+1))
	if _, err := bad.NewLock("k", time.Second).Acquire(context.Background()); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("prefix over %d bytes: err = %v", MaxPrefixLen, err)
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
	m := NewManager(lateWaiter{newFake()}, prefix)
	defer m.Close()
	err := m.NewLock("k", 40*time.Millisecond).Run(context.Background(), ModeBlock, Options{}, func(context.Context) error { return nil })
	var de *DriverError
	if errors.As(err, &de) {
		t.Fatalf("err = %v: a key handed over at the timeout became a backend error", err)
	}
	if err != nil && !errors.Is(err, ErrNotAcquired) && !errors.Is(err, ErrLost) {
		t.Fatalf("err = %v; want success, ErrNotAcquired or ErrLost", err)
	}
}
