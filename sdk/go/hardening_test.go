package lock

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

// eventually polls cond until it holds or the bound passes.
func eventually(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", bound, what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestTTLsAndIntervalsOutOfRangeAreRejectedBeforeTheBackend(t *testing.T) {
	m, f := newTestManager(t)
	ctx := context.Background()
	noop := func(context.Context) error { return nil }
	cases := []struct {
		name, field, says string
		run               func() error
	}{
		{"ttl over the maximum", "ttl", "365 days", func() error { _, err := m.newLock("k", driver.MaxTTL+1).Acquire(ctx); return err }},
		{"ttl at int64 max", "ttl", "maximum", func() error { return m.newLock("k", 1<<63-1).run(ctx, OpTry, nil, noop) }},
		{"retry delay under the floor", "retry delay", "minimum is 1ms", func() error {
			return m.newLock("k", time.Second).Block(ctx, WithRetryDelay(time.Nanosecond))
		}},
		{"refresh under the floor", "refresh every", "minimum is 1ms", func() error {
			return m.newLock("k", time.Second).run(ctx, OpTry, []Option{WithRefreshEvery(time.Nanosecond)}, noop)
		}},
		{"ttl too short for the default refresh", "refresh every", "too short", func() error {
			return m.newLock("k", time.Millisecond).run(ctx, OpTry, []Option{WithRefresh()}, noop)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.calls.Load()
			err := c.run()
			var iae *InvalidArgumentError
			if !errors.As(err, &iae) || iae.Field != c.field || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("err = %v; want an InvalidArgumentError on %q saying %q", err, c.field, c.says)
			}
			if n := f.calls.Load() - before; n != 0 {
				t.Fatalf("the driver was called %d times", n)
			}
		})
	}
	// The largest TTL itself is fine.
	l := m.newLock("max", driver.MaxTTL)
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire with the maximum TTL = %v, %v", ok, err)
	}
	if !l.IsAcquired() || time.Until(l.ExpiresAt()) < driver.MaxTTL-time.Minute {
		t.Fatalf("a lock with the maximum TTL expires at %v", l.ExpiresAt())
	}
}

func TestAcquireOnAHeldHandleNeverSilentlyRetakesALostLock(t *testing.T) {
	m, f := newTestManager(t)
	ctx := context.Background()
	l := m.newLock("k", time.Minute)
	if ok, _ := l.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	first := l.Token()
	f.wipe() // the backend restarted without persistence
	ok, err := l.Acquire(ctx)
	var lost *LostError
	if ok || !errors.As(err, &lost) {
		t.Fatalf("Acquire after the backend lost the lock = %v, %v; want false and a *LostError", ok, err)
	}
	if l.IsAcquired() || f.heldBy(prefix+"k") != "" {
		t.Fatal("the handle still claims the lock, or took it again")
	}
	// The next Acquire is a new acquisition, with a new token.
	if ok, err := l.Acquire(ctx); !ok || err != nil || l.Token() == first {
		t.Fatalf("the next Acquire = %v, %v, token %d (was %d)", ok, err, l.Token(), first)
	}
}

func TestARunWhoseLockWasLostAndRetakenInsideFnReportsTheLoss(t *testing.T) {
	m, f := newTestManager(t)
	other := newEngine(f, prefix)
	l := m.newLock("k", time.Minute)
	fnCtxEnded := false
	err := l.run(context.Background(), OpTry, nil, func(ctx context.Context) error {
		f.wipe() // the backend lost the lock...
		// ... and another manager ran under the key meanwhile.
		if err := other.newLock("k", time.Minute).run(context.Background(), OpTry, nil, func(context.Context) error { return nil }); err != nil {
			return err
		}
		held, _ := FromContext(ctx)
		_, _ = held.Acquire(context.Background())
		fnCtxEnded = ctx.Err() != nil
		return nil
	})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Run = %v; want ErrLost: the work did not run under one continuous hold", err)
	}
	if !fnCtxEnded {
		t.Fatal("fn's context was not cancelled when the loss was found")
	}
}

func TestARunWhoseFnReleasedAndRetookItsLockIsLost(t *testing.T) {
	m, f := newTestManager(t)
	other := newEngine(f, prefix)
	l := m.newLock("k", time.Minute)
	var tokens []uint64
	err := l.run(context.Background(), OpTry, nil, func(ctx context.Context) error {
		tokens = append(tokens, l.Token())
		if err := l.Release(context.Background()); err != nil {
			return err
		}
		if err := other.newLock("k", time.Minute).run(context.Background(), OpTry, nil, func(context.Context) error { return nil }); err != nil {
			return err
		}
		if ok, err := l.Acquire(context.Background()); !ok || err != nil {
			return errors.New("could not take the key back")
		}
		tokens = append(tokens, l.Token())
		return nil
	})
	if !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "own handle") {
		t.Fatalf("Run = %v (tokens %v); want ErrLost saying the handle released it", err, tokens)
	}
	if h := f.heldBy(prefix + "k"); h != "" {
		t.Fatalf("the re-taken key is still held by %s after the Run", h)
	}
}

func TestBlockReturnsAtItsDeadlineWhenTheBackendNeverAnswers(t *testing.T) {
	m, f := newTestManager(t)
	f.stall.Store(true)
	const timeout = 100 * time.Millisecond
	start := time.Now()
	err := m.newLock("k", time.Minute).Block(context.Background(), WithTimeout(timeout))
	took := time.Since(start)
	if took > timeout+time.Second {
		t.Fatalf("Block took %v with a timeout of %v", took, timeout)
	}
	var de *DriverError
	if !errors.As(err, &de) || errors.Is(err, ErrNotAcquired) || CodeOf(err) != CodeDriver {
		t.Fatalf("Block = %v (code %v); want a *DriverError: a backend that never answers is not contention", err, CodeOf(err))
	}
}

func TestAnOutageIsNotContention(t *testing.T) {
	down := errors.New("connection refused")
	const timeout = time.Minute
	check := func(t *testing.T, err error, start time.Time) {
		t.Helper()
		if !errors.Is(err, down) || errors.Is(err, ErrNotAcquired) || CodeOf(err) != CodeDriver {
			t.Fatalf("Block with the backend down = %v (code %v); want the backend's error as a *DriverError", err, CodeOf(err))
		}
		if took := time.Since(start); took > timeout/2 {
			t.Fatalf("Block sat out %v of the outage; a failure ends the wait at once", took)
		}
	}
	t.Run("timeout", func(t *testing.T) {
		m, f := newTestManager(t)
		f.failAll.Store(&down)
		start := time.Now()
		err := m.newLock("k", time.Minute).Block(context.Background(), WithTimeout(timeout))
		check(t, err, start)
	})
	t.Run("ctx deadline", func(t *testing.T) {
		m, f := newTestManager(t)
		f.failAll.Store(&down)
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		start := time.Now()
		err := m.newLock("k", time.Minute).Block(ctx, WithTimeout(time.Hour))
		check(t, err, start)
	})
	t.Run("waiter", func(t *testing.T) {
		f := newFake()
		w := &failingWaiter{fakeDriver: f, err: down}
		m := newEngine(w, prefix)
		defer m.Close()
		start := time.Now()
		err := m.newLock("k", time.Minute).Block(context.Background(), WithTimeout(timeout))
		check(t, err, start)
	})
}

// failingWaiter is a Waiter whose every AcquireWait fails.
type failingWaiter struct {
	*fakeDriver
	err error
}

func (w *failingWaiter) AcquireWait(context.Context, string, string, time.Duration) (uint64, error) {
	w.calls.Add(1)
	return 0, w.err
}

// grantingLate is a Waiter that hands the key over just as its wait is
// cancelled, and whose reply takes a little while: the grant races Close.
type grantingLate struct {
	*fakeDriver
	waiting *atomic.Bool
}

func (w grantingLate) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	token, ok, err := w.AcquireFenced(context.Background(), key, owner, ttl)
	w.waiting.Store(true)
	<-ctx.Done()
	time.Sleep(20 * time.Millisecond) // the grant's reply is on its way
	if err != nil || !ok {
		return 0, ctx.Err()
	}
	return token, nil
}

func TestCloseLeavesNothingAWaiterWasGrantedMeanwhile(t *testing.T) {
	f := newFake()
	var waiting atomic.Bool
	m := newEngine(grantingLate{f, &waiting}, prefix)
	done := make(chan error, 1)
	go func() {
		done <- m.newLock("k", time.Minute).Block(context.Background(), WithTimeout(time.Minute))
	}()
	eventually(t, 5*time.Second, "the waiter never called the driver", waiting.Load)
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("Block = %v; want ErrClosed", err)
	}
	if h := f.heldBy(prefix + "k"); h != "" {
		t.Fatalf("the key granted while Close ran is held by %s, which nobody knows", h)
	}
}

func TestReleaseAfterCloseIsANoOpForEveryHandle(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	held := m.newLock("held", time.Minute)
	swept := m.newLock("swept", time.Millisecond)
	for _, l := range []*ManagedLock{held, swept} {
		if ok, _ := l.Acquire(ctx); !ok {
			t.Fatal("acquire")
		}
	}
	for swept.IsAcquired() {
		time.Sleep(time.Millisecond)
	}
	m.mu.Lock()
	delete(m.held, swept) // as the sweep does with handles left to expire
	m.mu.Unlock()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	for _, l := range []*ManagedLock{held, swept, m.newLock("never", time.Minute)} {
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release(%s) after Close = %v; want nil", l.Key(), err)
		}
	}
}

func TestACancelledAcquireHoldsNothing(t *testing.T) {
	m, f := newTestManager(t)
	f.grantThenCancel.Store(true)
	ok, err := m.newLock("k", time.Minute).Acquire(context.Background())
	if ok || err == nil {
		t.Fatalf("Acquire = %v, %v; want the driver's error", ok, err)
	}
	eventually(t, 5*time.Second, "the key granted to a failed acquire is still held", func() bool { return f.heldBy(prefix+"k") == "" })
}

func TestALostErrorSaysWhy(t *testing.T) {
	ctx := context.Background()
	t.Run("force released", func(t *testing.T) {
		m, f := newTestManager(t)
		err := m.newLock("k", time.Minute).run(ctx, OpTry, []Option{WithRefreshEvery(5 * time.Millisecond)}, func(ctx context.Context) error {
			_ = f.ForceRelease(context.Background(), prefix+"k")
			<-ctx.Done()
			return nil
		})
		var lost *LostError
		if !errors.As(err, &lost) || lost.Reason != LostGone || !strings.Contains(err.Error(), "force-released") {
			t.Fatalf("Run = %v; want a LostGone loss saying the backend no longer had it", err)
		}
	})
	t.Run("taken over", func(t *testing.T) {
		m, f := newTestManager(t)
		err := m.newLock("k", time.Minute).run(ctx, OpTry, []Option{WithRefreshEvery(5 * time.Millisecond)}, func(ctx context.Context) error {
			_ = f.ForceRelease(context.Background(), prefix+"k")
			_, _ = f.Acquire(context.Background(), prefix+"k", newOwner(), time.Minute)
			<-ctx.Done()
			return nil
		})
		var lost *LostError
		if !errors.As(err, &lost) || lost.Reason != LostTakenOver || !strings.Contains(err.Error(), "another owner") {
			t.Fatalf("Run = %v; want a LostTakenOver loss naming another owner", err)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		m, f := newTestManager(t)
		down := errors.New("connection refused")
		var failing atomic.Bool
		err := m.newLock("k", 60*time.Millisecond).run(ctx, OpTry, []Option{WithRefreshEvery(10 * time.Millisecond)}, func(ctx context.Context) error {
			f.failAll.Store(&down)
			failing.Store(true)
			<-ctx.Done()
			f.failAll.Store(nil)
			return nil
		})
		var lost *LostError
		if !errors.As(err, &lost) || lost.Reason != LostUnreachable || lost.Since.IsZero() || !errors.Is(err, down) || !strings.Contains(err.Error(), "since") {
			t.Fatalf("Run = %v; want a LostUnreachable loss carrying the backend's error and when it began", err)
		}
	})
}
