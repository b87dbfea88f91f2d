package lock_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerotal/lock/drivers/memory"
	lock "github.com/zerotal/lock/sdk/go"
)

// The engine and the memory driver run inside a testing/synctest bubble:
// their timers and clocks are the bubble's, so minutes of leases, refreshes
// and waits pass in microseconds of real time, deterministically. The
// driver must be made inside the bubble, whose clock it reads.

// A 30 s lease refreshed every 10 s holds through 95 s of work.
func TestSynctestRefreshKeepsALongJobsLock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := lock.New(memory.New())
		defer m.Close()
		start := time.Now()
		var token uint64
		err := m.Try(context.Background(), "job", 30*time.Second, func(ctx context.Context) error {
			l, _ := lock.FromContext(ctx)
			token = l.Token()
			select {
			case <-time.After(95 * time.Second):
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		}, lock.WithRefreshEvery(10*time.Second))
		if err != nil || token == 0 {
			t.Fatalf("Try = %v (token %d), want the work to finish under the lock", err, token)
		}
		if took := time.Since(start); took != 95*time.Second {
			t.Errorf("the work took %v of the bubble's time, want 95s", took)
		}
	})
}

// Without refresh, work that outlives its TTL has its context cancelled at
// the TTL, to the nanosecond, and Try reports the loss.
func TestSynctestExpiryCancelsWorkAtTheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := lock.New(memory.New())
		defer m.Close()
		start := time.Now()
		var cancelledAfter time.Duration
		err := m.Try(context.Background(), "job", 30*time.Second, func(ctx context.Context) error {
			<-ctx.Done()
			cancelledAfter = time.Since(start)
			return nil
		})
		var lost *lock.LostError
		if !errors.As(err, &lost) || lost.Reason != lock.LostExpired {
			t.Fatalf("Try = %v, want a LostError (expired)", err)
		}
		if cancelledAfter != 30*time.Second {
			t.Errorf("fn's context ended after %v, want 30s", cancelledAfter)
		}
	})
}

// A force release at 25 s is found by the refresh at 30 s: the work is
// cancelled then, and Try says the lock was gone.
func TestSynctestForceReleaseIsFoundByTheNextRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		table := memory.NewTable()
		m := lock.New(table.Driver())
		defer m.Close()
		admin := lock.New(table.Driver())
		defer admin.Close()
		go func() {
			time.Sleep(25 * time.Second)
			_ = admin.Make("job", time.Second).ForceRelease(context.Background())
		}()
		start := time.Now()
		var cancelledAfter time.Duration
		err := m.Try(context.Background(), "job", 30*time.Second, func(ctx context.Context) error {
			<-ctx.Done()
			cancelledAfter = time.Since(start)
			return nil
		}, lock.WithRefreshEvery(10*time.Second))
		var lost *lock.LostError
		if !errors.As(err, &lost) || lost.Reason != lock.LostGone {
			t.Fatalf("Try = %v, want a LostError (gone)", err)
		}
		if cancelledAfter != 30*time.Second {
			t.Errorf("fn's context ended after %v, want 30s (the first refresh after the force release)", cancelledAfter)
		}
	})
}

// Block gives up at its timeout, saying how long it waited, and ends at
// once when its context does.
func TestSynctestBlockTimesOutAndHonoursItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := lock.New(memory.New())
		defer m.Close()
		ctx := context.Background()
		holder := m.Make("k", time.Hour)
		if ok, err := holder.Acquire(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		nop := func(context.Context) error { return nil }
		var na *lock.NotAcquiredError
		err := m.Block(ctx, "k", time.Minute, nop, lock.WithTimeout(5*time.Second))
		if !errors.As(err, &na) || na.Waited != 5*time.Second {
			t.Fatalf("Block = %v, want not acquired after waiting 5s", err)
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := m.Block(cctx, "k", time.Minute, nop); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Block = %v, want the context's deadline", err)
		}
	})
}

// A waiter gets the key the instant its holder releases it (the memory
// driver hands it over in FIFO order), and a holder that vanishes hands it
// over at its TTL.
func TestSynctestHandOffAtReleaseAndAtTheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := lock.New(memory.New())
		defer m.Close()
		ctx := context.Background()
		holder := m.Make("k", 20*time.Second)
		if ok, err := holder.Acquire(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		go func() {
			time.Sleep(3 * time.Second)
			_ = holder.Release(ctx)
		}()
		start := time.Now()
		if err := m.Block(ctx, "k", 20*time.Second, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Errorf("the waiter got the key after %v, want 3s (at the release)", got)
		}

		if ok, err := holder.Acquire(ctx); !ok || err != nil { // and now never releases it
			t.Fatal(ok, err)
		}
		start = time.Now()
		if err := m.Block(ctx, "k", time.Minute, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got != 20*time.Second {
			t.Errorf("the waiter got an abandoned key after %v, want 20s (its TTL)", got)
		}
	})
}
