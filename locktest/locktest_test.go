package locktest_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
	"github.com/zerotal/lock/locktest"
	lock "github.com/zerotal/lock/sdk/go"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Every control works inside a synctest bubble: minutes of TTLs, delays
// and hangs pass at once, and deterministically.
func TestControlsInASynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := locktest.New()
		m := lock.New(d)
		defer m.Close()
		ctx := context.Background()
		nop := func(context.Context) error { return nil }

		// Delay: every acquire takes 2 s of the bubble's time.
		d.Delay(locktest.Acquire, 2*time.Second)
		start := time.Now()
		if err := m.Try(ctx, "k", time.Minute, nop); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 2*time.Second {
			t.Errorf("a delayed Try took %v, want 2s", took)
		}
		d.Delay(locktest.Acquire, 0)

		// HangNext: the acquire never answers; the caller's deadline ends it.
		d.HangNext(locktest.Acquire, 1)
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := m.Try(cctx, "k", time.Minute, nop)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a hung Try = %v, want the deadline", err)
		}

		// Partition and Heal: a backend error, never contention, then fine.
		d.Partition()
		err = m.Try(ctx, "k", time.Minute, nop)
		var de *lock.DriverError
		if !errors.As(err, &de) || !errors.Is(err, locktest.ErrPartitioned) || errors.Is(err, lock.ErrNotAcquired) {
			t.Errorf("a partitioned Try = %v, want a DriverError", err)
		}
		d.Heal()
		if err := m.Try(ctx, "k", time.Minute, nop); err != nil {
			t.Errorf("after Heal: %v", err)
		}

		// Steal: the holder's next refresh sees another owner.
		err = m.Try(ctx, "k", 30*time.Second, func(ctx context.Context) error {
			time.Sleep(5 * time.Second)
			if ok, err := d.Steal("k", time.Hour); !ok || err != nil {
				t.Errorf("Steal = %v, %v", ok, err)
			}
			<-ctx.Done()
			return nil
		}, lock.WithRefreshEvery(10*time.Second))
		var lost *lock.LostError
		if !errors.As(err, &lost) || lost.Reason != lock.LostTakenOver || lost.Token == 0 {
			t.Errorf("Try under a steal = %v, want a LostError (taken over, with the thief's token)", err)
		}

		// FailNext on refreshes: two fail, the third succeeds, the work
		// keeps its lock.
		_ = d.Expire("k")
		d.FailNext(locktest.Extend, 2, nil)
		err = m.Try(ctx, "k", 30*time.Second, func(ctx context.Context) error {
			time.Sleep(time.Minute)
			return ctx.Err()
		}, lock.WithRefreshEvery(10*time.Second))
		if err != nil {
			t.Errorf("Try with two failed refreshes = %v, want nil", err)
		}
		if n := len(d.CallsOf(locktest.Extend)); n < 5 {
			t.Errorf("%d extends recorded, want at least 5 in a minute", n)
		}
	})
}

// plain hides every optional capability of the memory driver, to check the
// kit's emulation: a Block over it still wakes when the holder releases.
type plain struct{ d driver.Driver }

func (p plain) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	return p.d.Acquire(ctx, key, owner, ttl)
}
func (p plain) Release(ctx context.Context, key, owner string) (bool, error) {
	return p.d.Release(ctx, key, owner)
}
func (p plain) ForceRelease(ctx context.Context, key string) error { return p.d.ForceRelease(ctx, key) }
func (p plain) Exists(ctx context.Context, key string) (bool, error) {
	return p.d.Exists(ctx, key)
}
func (p plain) Close() error { return p.d.Close() }

func TestWrapEmulatesWaitingOverADriverThatCannotWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := locktest.Wrap(plain{memory.New()}, locktest.WithPrefix("app:"))
		m := lock.New(d, lock.WithPrefix("app:"))
		defer m.Close()
		ctx := context.Background()
		holder := m.Make("k", time.Hour)
		if ok, err := holder.Acquire(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		go func() {
			time.Sleep(3 * time.Second)
			_ = holder.Release(ctx)
		}()
		start := time.Now()
		if err := m.Block(ctx, "k", time.Minute, func(context.Context) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took != 3*time.Second {
			t.Errorf("the waiter got the key after %v, want 3s", took)
		}
		if calls := d.CallsOf(locktest.AcquireWait); len(calls) != 1 || calls[0].Key != "k" || !calls[0].OK {
			t.Errorf("AcquireWait calls: %+v", calls)
		}
	})
}
