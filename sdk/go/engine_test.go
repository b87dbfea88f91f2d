package lock

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

const prefix = "t:"

// nilCtx is a nil context, passed on purpose to check that the engine
// rejects it instead of panicking.
var nilCtx context.Context

func newTestManager(t *testing.T) (*Manager, *fakeDriver) {
	t.Helper()
	f := newFake()
	m := newEngine(f, prefix)
	t.Cleanup(func() { _ = m.Close() })
	return m, f
}

func TestInvalidInputNamesTheFieldAndTouchesNoBackend(t *testing.T) {
	m, f := newTestManager(t)
	ctx := context.Background()
	noop := func(context.Context) error { return nil }
	long := strings.Repeat("k", maxKeyLen+1)
	cases := []struct {
		name, field string
		run         func() error
	}{
		{"empty key", "key", func() error { return m.newLock("", time.Second).run(ctx, OpTry, nil, noop) }},
		{"key over 1KiB", "key", func() error { return m.newLock(long, time.Second).run(ctx, OpTry, nil, noop) }},
		{"invalid UTF-8", "key", func() error { return m.newLock("a\xffb", time.Second).run(ctx, OpTry, nil, noop) }},
		{"NUL in key", "key", func() error { return m.newLock("a\x00b", time.Second).run(ctx, OpTry, nil, noop) }},
		{"ttl under 1ms", "ttl", func() error { return m.newLock("k", time.Millisecond-1).run(ctx, OpTry, nil, noop) }},
		{"zero ttl", "ttl", func() error { _, err := m.newLock("k", 0).Acquire(ctx); return err }},
		{"negative ttl", "ttl", func() error { return m.newLock("k", -time.Second).Block(ctx) }},
		{"nil ctx", "ctx", func() error { return m.newLock("k", time.Second).run(nilCtx, OpTry, nil, noop) }},
		{"nil fn", "fn", func() error { return m.newLock("k", time.Second).run(ctx, OpTry, nil, nil) }},
		{"negative timeout", "timeout", func() error { return m.newLock("k", time.Second).Block(ctx, WithTimeout(-1)) }},
		{"negative retry delay", "retry delay", func() error { return m.newLock("k", time.Second).Block(ctx, WithRetryDelay(-time.Millisecond)) }},
		{"negative refresh", "refresh every", func() error {
			return m.newLock("k", time.Second).run(ctx, OpTry, []Option{WithRefreshEvery(-1)}, noop)
		}},
		{"refresh not shorter than ttl", "refresh every", func() error {
			return m.newLock("k", time.Second).run(ctx, OpTry, []Option{WithRefreshEvery(time.Second)}, noop)
		}},
		{"nil ctx on release", "ctx", func() error { return m.newLock("k", time.Second).Release(nilCtx) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := f.calls.Load()
			err := c.run()
			var iae *InvalidArgumentError
			if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &iae) || iae.Field != c.field {
				t.Fatalf("err = %v; want an InvalidArgumentError on field %q", err, c.field)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Errorf("message %q does not name the field %q", err, c.field)
			}
			if got := f.calls.Load() - before; got != 0 {
				t.Errorf("driver was called %d times for bad input", got)
			}
		})
	}
	if err := newEngine(nil, "").newLock("k", time.Second).Release(ctx); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil driver: err = %v; want ErrInvalidArgument", err)
	}
}

func TestInvalidInputLosesNothingHeld(t *testing.T) {
	m, f := newTestManager(t)
	ctx := context.Background()
	l := m.newLock("k", time.Minute)
	if ok, err := l.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := l.Block(ctx, WithRetryDelay(-1)); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("Block with bad option = %v", err)
	}
	if !l.IsAcquired() || !f.holds(prefix+"k", l.Owner()) {
		t.Fatal("a rejected call freed the lock")
	}
}

func TestOwnerTokensAreFresh128BitHex(t *testing.T) {
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	seen := map[string]bool{}
	for range 2000 {
		o := newOwner()
		if !hex32.MatchString(o) {
			t.Fatalf("owner %q is not 32 lowercase hex digits", o)
		}
		if seen[o] {
			t.Fatalf("owner %q handed out twice", o)
		}
		seen[o] = true
	}
}

func TestTryRunsFnUnderTheLockAndReleases(t *testing.T) {
	m, f := newTestManager(t)
	ctx := context.Background()
	l := m.newLock("job", time.Minute)
	var owner string
	err := l.run(ctx, OpTry, nil, func(ctx context.Context) error {
		owner = l.Owner()
		if !f.holds(prefix+"job", owner) {
			t.Error("fn runs without the lock held in the backend")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Run = %v", err)
	}
	if f.holds(prefix+"job", owner) || l.IsAcquired() {
		t.Fatal("lock still held after Run")
	}
}

func TestTryOnAHeldKeyDoesNotRunFn(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	holder := m.newLock("busy", time.Minute)
	if ok, _ := holder.Acquire(ctx); !ok {
		t.Fatal("setup acquire failed")
	}
	ran := false
	err := m.newLock("busy", time.Minute).run(ctx, OpTry, nil, func(context.Context) error { ran = true; return nil })
	var nae *NotAcquiredError
	if !errors.Is(err, ErrNotAcquired) || !errors.As(err, &nae) || nae.Key != "busy" {
		t.Fatalf("err = %v; want *NotAcquiredError for key %q (without prefix)", err, "busy")
	}
	if nae.HTTPStatus() != 409 {
		t.Errorf("HTTPStatus = %d; want 409", nae.HTTPStatus())
	}
	if ran {
		t.Fatal("fn ran although the lock was held")
	}
	if !holder.IsAcquired() {
		t.Fatal("the holder lost its lock")
	}
}

func TestFnErrorComesBackUnchanged(t *testing.T) {
	m, _ := newTestManager(t)
	sentinel := errors.New("boom")
	err := m.newLock("k", time.Minute).run(context.Background(), OpTry, nil, func(context.Context) error { return sentinel })
	if err != sentinel {
		t.Fatalf("err = %v; want the fn's error itself", err)
	}
}

func TestPanicReleasesThenPropagates(t *testing.T) {
	m, f := newTestManager(t)
	l := m.newLock("k", time.Minute)
	var owner string
	func() {
		defer func() {
			if r := recover(); r != "kaboom" {
				t.Fatalf("recovered %v; want the fn's panic value", r)
			}
		}()
		_ = l.run(context.Background(), OpTry, nil, func(context.Context) error {
			owner = l.Owner()
			panic("kaboom")
		})
	}()
	if f.holds(prefix+"k", owner) {
		t.Fatal("lock still held after fn panicked")
	}
}

func TestFnOutlivingTheTTLIsReportedLost(t *testing.T) {
	m, _ := newTestManager(t)
	const ttl = 30 * time.Millisecond
	l := m.newLock("slow", ttl)
	start := time.Now()
	err := l.run(context.Background(), OpTry, nil, func(ctx context.Context) error {
		<-ctx.Done() // the context ends at the client-side expiry
		if !errors.Is(context.Cause(ctx), ErrLost) {
			t.Errorf("cause = %v; want ErrLost", context.Cause(ctx))
		}
		return nil
	})
	var le *LostError
	if !errors.As(err, &le) || !errors.Is(err, ErrLost) || le.Key != "slow" {
		t.Fatalf("err = %v; want *LostError", err)
	}
	if waited := time.Since(start); waited < ttl {
		t.Fatalf("ctx ended after %v, before the TTL of %v", waited, ttl)
	}
}

func TestRefreshKeepsTheLockPastItsTTL(t *testing.T) {
	// In a synctest bubble: a refresher stalled by a loaded machine
	// must not lose a lock whose TTL is milliseconds of real time.
	synctest.Test(t, func(t *testing.T) {
		m, f := newTestManager(t)
		const ttl = 60 * time.Millisecond
		l := m.newLock("long", ttl)
		err := l.run(context.Background(), OpTry, []Option{WithRefresh()}, func(ctx context.Context) error {
			deadline := time.Now().Add(5 * ttl)
			for time.Now().Before(deadline) {
				if ctx.Err() != nil {
					return context.Cause(ctx)
				}
				if !f.holds(prefix+"long", l.Owner()) {
					t.Error("lock lapsed although refreshed")
					return nil
				}
				time.Sleep(5 * time.Millisecond)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

func TestRefreshFindingTheLockGoneCancelsFnAndReportsLost(t *testing.T) {
	m, f := newTestManager(t)
	const ttl = 60 * time.Millisecond
	l := m.newLock("k", ttl)
	err := l.run(context.Background(), OpTry, []Option{WithRefreshEvery(10 * time.Millisecond)}, func(ctx context.Context) error {
		f.extendLost.Store(true)
		<-ctx.Done()
		return nil // a fn that claims success must not hide the loss
	})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("err = %v; want ErrLost", err)
	}
}

func TestFailingRefreshesCancelFnAtTheClientSideExpiry(t *testing.T) {
	m, f := newTestManager(t)
	const ttl = 80 * time.Millisecond
	l := m.newLock("k", ttl)
	backendDown := errors.New("backend down")
	var cancelledAt, expiresAt time.Time
	err := l.run(context.Background(), OpTry, []Option{WithRefreshEvery(10 * time.Millisecond)}, func(ctx context.Context) error {
		expiresAt = l.ExpiresAt()
		f.failAll.Store(&backendDown)
		<-ctx.Done()
		cancelledAt = time.Now()
		f.failAll.Store(nil)
		return nil
	})
	if !errors.Is(err, ErrLost) {
		t.Fatalf("err = %v; want ErrLost", err)
	}
	if cancelledAt.Before(expiresAt.Add(-time.Millisecond)) {
		t.Errorf("fn cancelled at %v, before the expiry %v: a failing refresh is not a loss yet", cancelledAt, expiresAt)
	}
	if late := cancelledAt.Sub(expiresAt); late > 200*time.Millisecond {
		t.Errorf("fn cancelled %v after the lock's client-side expiry; want at that moment", late)
	}
}

func TestReleaseOnCancelledContextStillFrees(t *testing.T) {
	m, f := newTestManager(t)
	l := m.newLock("k", time.Minute)
	if ok, _ := l.Acquire(context.Background()); !ok {
		t.Fatal("acquire failed")
	}
	owner := l.Owner()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release = %v", err)
	}
	if f.holds(prefix+"k", owner) {
		t.Fatal("lock still held after release on a cancelled ctx")
	}
}

func TestBackendFailureIsADriverErrorNotContention(t *testing.T) {
	m, f := newTestManager(t)
	down := errors.New("connection refused")
	f.failAll.Store(&down)
	err := m.newLock("k", time.Second).run(context.Background(), OpTry, nil, func(context.Context) error { return nil })
	var de *DriverError
	if !errors.As(err, &de) || de.Op != "acquire" || de.Key != "k" || !errors.Is(err, down) {
		t.Fatalf("err = %v; want *DriverError{acquire, k} wrapping the driver's error", err)
	}
	if errors.Is(err, ErrNotAcquired) {
		t.Fatal("a backend failure matches ErrNotAcquired")
	}
}

func TestBlockWaitsTheWholeTimeout(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	if ok, _ := m.newLock("k", time.Minute).Acquire(ctx); !ok {
		t.Fatal("setup")
	}
	const timeout = 60 * time.Millisecond
	start := time.Now()
	err := m.newLock("k", time.Minute).Block(ctx, WithTimeout(timeout), WithRetryDelay(25*time.Millisecond))
	var nae *NotAcquiredError
	if !errors.As(err, &nae) {
		t.Fatalf("err = %v; want *NotAcquiredError", err)
	}
	if waited := time.Since(start); waited < timeout || nae.Waited < timeout {
		t.Fatalf("gave up after %v (reported %v); want the whole %v", waited, nae.Waited, timeout)
	}
}

func TestBlockReturnsCtxErrorWhenCtxEndsFirst(t *testing.T) {
	m, _ := newTestManager(t)
	if ok, _ := m.newLock("k", time.Minute).Acquire(context.Background()); !ok {
		t.Fatal("setup")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	err := m.newLock("k", time.Minute).Block(ctx, WithTimeout(time.Minute))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrNotAcquired) {
		t.Fatalf("err = %v; want ctx's DeadlineExceeded", err)
	}
}

func TestBlockWakesOnReleaseNoticeNotThePollingDelay(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	holder := m.newLock("k", time.Minute)
	if ok, _ := holder.Acquire(ctx); !ok {
		t.Fatal("setup")
	}
	waiter := m.newLock("k", time.Minute)
	got := make(chan time.Time, 1)
	go func() {
		if err := waiter.Block(ctx, WithRetryDelay(time.Hour)); err != nil {
			t.Errorf("Block = %v", err)
		}
		got <- time.Now()
	}()
	// Wait until the waiter has subscribed: its first attempt has failed.
	deadline := time.Now().Add(5 * time.Second)
	for len(m.d.(*fakeDriver).subsFor(prefix+"k")) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	released := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-got:
		if at.Sub(released) > 2*time.Second {
			t.Fatalf("woke %v after the release", at.Sub(released))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("waiter never woke although the retry delay is an hour: notices are ignored")
	}
}

func (f *fakeDriver) subsFor(key string) []chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.subs[key]
}

func TestRefreshByHand(t *testing.T) {
	m, f := newTestManager(t)
	ctx := context.Background()
	l := m.newLock("k", time.Minute)
	if ok, err := l.Refresh(ctx); ok || err != nil {
		t.Fatalf("Refresh before acquire = %v, %v; want false, nil", ok, err)
	}
	if ok, _ := l.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	before := l.ExpiresAt()
	time.Sleep(2 * time.Millisecond)
	if ok, err := l.Refresh(ctx); !ok || err != nil {
		t.Fatalf("Refresh = %v, %v", ok, err)
	}
	if !l.ExpiresAt().After(before) {
		t.Fatal("ExpiresAt did not move")
	}
	f.expireNow(prefix + "k")
	if ok, err := l.Refresh(ctx); ok || err != nil {
		t.Fatalf("Refresh of an expired lock = %v, %v; want false, nil", ok, err)
	}
	if l.IsAcquired() {
		t.Fatal("IsAcquired after a refresh found the lock gone")
	}
}

func TestCloseCancelsRunningWorkReleasesAndClosesTheDriver(t *testing.T) {
	f := newFake()
	m := newEngine(f, prefix)
	l := m.newLock("k", time.Minute)
	started := make(chan struct{})
	result := make(chan error, 1)
	var owner string
	go func() {
		result <- l.run(context.Background(), OpTry, []Option{WithRefresh()}, func(ctx context.Context) error {
			owner = l.Owner()
			close(started)
			<-ctx.Done()
			if !errors.Is(context.Cause(ctx), ErrClosed) {
				t.Errorf("cause = %v; want ErrClosed", context.Cause(ctx))
			}
			return nil
		})
	}()
	<-started
	if err := m.Close(); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if err := <-result; !errors.Is(err, ErrClosed) {
		t.Fatalf("Run = %v; want an error matching ErrClosed", err)
	}
	if !f.isClosed() {
		t.Fatal("driver not closed")
	}
	f.mu.Lock()
	_, stillThere := f.locks[prefix+"k"]
	f.mu.Unlock()
	if stillThere {
		t.Fatalf("Close left the lock of %s in the backend", owner)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := m.newLock("k", time.Minute).Acquire(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Acquire after Close = %v; want ErrClosed", err)
	}
}

func TestCloseWakesBlockedWaiters(t *testing.T) {
	m, _ := newTestManager(t)
	ctx := context.Background()
	if ok, _ := m.newLock("k", time.Minute).Acquire(ctx); !ok {
		t.Fatal("setup")
	}
	res := make(chan error, 1)
	go func() { res <- m.newLock("k", time.Minute).Block(ctx) }()
	// Close once the waiter is parked (it has subscribed to release notices).
	deadline := time.Now().Add(5 * time.Second)
	for len(m.d.(*fakeDriver).subsFor(prefix+"k")) == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	_ = m.Close()
	select {
	case err := <-res:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Block = %v; want ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake a blocked waiter")
	}
}

func TestContentionThroughTheEngineNeverOverlaps(t *testing.T) {
	m, _ := newTestManager(t)
	var inside, overlaps, done atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				err := m.newLock("hot", time.Second).run(context.Background(), OpBlock, []Option{WithRetryDelay(time.Millisecond)}, func(context.Context) error {
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					inside.Add(-1)
					return nil
				})
				if err == nil {
					done.Add(1)
				} else {
					t.Errorf("Run = %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() != 0 {
		t.Fatalf("%d overlapping critical sections", overlaps.Load())
	}
	if done.Load() != 8*200 {
		t.Fatalf("%d of %d runs completed", done.Load(), 8*200)
	}
}
