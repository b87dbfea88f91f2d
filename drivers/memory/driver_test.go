package memory_test

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
)

func TestAcquireContention(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	a, b := newDriver(t, table), newDriver(t, table)
	ownerA, ownerB := newOwner(), newOwner()

	mustAcquire(t, a, "k", ownerA, time.Minute)
	if ok, err := b.Acquire(ctx, "k", ownerB, time.Minute); ok || err != nil {
		t.Fatalf("second owner Acquire = %v, %v; want false, nil", ok, err)
	}
	if ok, err := b.Acquire(ctx, "other", ownerB, time.Minute); !ok || err != nil {
		t.Fatalf("Acquire of another key = %v, %v; want true, nil", ok, err)
	}
}

func TestReleaseIsOwnerGuarded(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t, memory.NewTable())
	owner, stranger := newOwner(), newOwner()

	if ok, err := d.Release(ctx, "k", owner); ok || err != nil {
		t.Fatalf("Release of a free key = %v, %v; want false, nil", ok, err)
	}
	mustAcquire(t, d, "k", owner, time.Minute)
	if ok, err := d.Release(ctx, "k", stranger); ok || err != nil {
		t.Fatalf("stranger's Release = %v, %v; want false, nil", ok, err)
	}
	if held, _ := d.Exists(ctx, "k"); !held {
		t.Fatal("a stranger's Release freed the key")
	}
	mustRelease(t, d, "k", owner)
	if held, _ := d.Exists(ctx, "k"); held {
		t.Fatal("key still held after its owner released it")
	}
	if ok, _ := d.Release(ctx, "k", owner); ok {
		t.Fatal("second Release reported true")
	}
	// The freed key must look free to every method, not just Exists.
	if ok, _ := d.Extend(ctx, "k", owner, time.Minute); ok {
		t.Fatal("Extend revived a released lock")
	}
	if _, held, _ := d.Inspect(ctx, "k"); held {
		t.Fatal("Inspect reports a released lock as held")
	}
	if ok, _ := d.Acquire(ctx, "k", stranger, time.Minute); !ok {
		t.Fatal("a released key could not be taken by another owner")
	}
}

func TestReacquireBySameOwnerResetsTTLAndKeepsToken(t *testing.T) {
	// In a synctest bubble: no real time passes between the calls, so
	// a loaded machine cannot stretch the gap past the short TTL.
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := newDriver(t, memory.NewTable())
		owner := newOwner()

		first := mustAcquire(t, d, "k", owner, 100*time.Millisecond)
		second := mustAcquire(t, d, "k", owner, time.Hour)
		if second != first {
			t.Fatalf("re-acquire changed the token from %d to %d", first, second)
		}
		time.Sleep(150 * time.Millisecond) // past the first TTL
		if held, _ := d.Exists(ctx, "k"); !held {
			t.Fatal("re-acquire did not reset the TTL")
		}
	})
}

func TestExpiryOnMillisecondTTL(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t, memory.NewTable())
	const ttl = time.Millisecond

	start := time.Now()
	mustAcquire(t, d, "k", newOwner(), ttl)
	eventually(t, "the 1ms lock expires", func() bool {
		held, err := d.Exists(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		return !held
	})
	if elapsed := time.Since(start); elapsed < ttl {
		t.Fatalf("lock freed after %v, before its TTL of %v", elapsed, ttl)
	}
	if ok, _ := d.Acquire(ctx, "k", newOwner(), time.Minute); !ok {
		t.Fatal("an expired key could not be taken")
	}
}

func TestExpiredLockCannotBeReleasedOrExtended(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t, memory.NewTable())
	owner := newOwner()

	mustAcquire(t, d, "k", owner, time.Millisecond)
	time.Sleep(5 * time.Millisecond) // let the TTL pass
	if ok, err := d.Extend(ctx, "k", owner, time.Minute); ok || err != nil {
		t.Fatalf("Extend of an expired lock = %v, %v; want false, nil", ok, err)
	}
	if ok, err := d.Release(ctx, "k", owner); ok || err != nil {
		t.Fatalf("Release of an expired lock = %v, %v; want false, nil", ok, err)
	}
}

func TestExtend(t *testing.T) {
	// In a synctest bubble: no real time passes between the calls, so
	// a loaded machine cannot stretch the gap past the short TTL.
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		d := newDriver(t, memory.NewTable())
		owner, stranger := newOwner(), newOwner()

		if ok, err := d.Extend(ctx, "k", owner, time.Minute); ok || err != nil {
			t.Fatalf("Extend of a free key = %v, %v; want false, nil", ok, err)
		}
		if held, _ := d.Exists(ctx, "k"); held {
			t.Fatal("Extend took a free key")
		}
		mustAcquire(t, d, "k", owner, 100*time.Millisecond)
		if ok, _ := d.Extend(ctx, "k", stranger, time.Hour); ok {
			t.Fatal("a stranger extended the lock")
		}
		if ok, err := d.Extend(ctx, "k", owner, time.Hour); !ok || err != nil {
			t.Fatalf("owner's Extend = %v, %v; want true, nil", ok, err)
		}
		time.Sleep(150 * time.Millisecond) // past the original TTL
		if held, _ := d.Exists(ctx, "k"); !held {
			t.Fatal("Extend did not push the expiry out")
		}
	})
}

func TestForceRelease(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t, memory.NewTable())

	if err := d.ForceRelease(ctx, "k"); err != nil {
		t.Fatalf("ForceRelease of a free key: %v", err)
	}
	mustAcquire(t, d, "k", newOwner(), time.Minute)
	if err := d.ForceRelease(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if held, _ := d.Exists(ctx, "k"); held {
		t.Fatal("key still held after ForceRelease")
	}
}

func TestFencingTokensIncreaseAcrossReleaseAndExpiry(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t, memory.NewTable())
	var last uint64
	check := func(token uint64, how string) {
		t.Helper()
		if token == 0 || token <= last {
			t.Fatalf("token after %s is %d; want > %d and never 0", how, token, last)
		}
		last = token
	}

	for i := range 5 {
		owner := newOwner()
		check(mustAcquire(t, d, "k", owner, time.Minute), "release")
		// Other keys share the counter; they must not break the per-key order.
		mustAcquire(t, d, "other", owner, time.Minute)
		mustRelease(t, d, "other", owner)
		if i%2 == 0 {
			mustRelease(t, d, "k", owner)
			continue
		}
		if ok, _ := d.Extend(ctx, "k", owner, time.Millisecond); !ok {
			t.Fatal("Extend failed")
		}
		time.Sleep(3 * time.Millisecond) // let the lock expire instead
	}
}

func TestInspect(t *testing.T) {
	ctx := context.Background()
	d := newDriver(t, memory.NewTable())
	owner := newOwner()
	const ttl = 90 * time.Second

	if _, held, err := d.Inspect(ctx, "k"); held || err != nil {
		t.Fatalf("Inspect of a free key: held=%v err=%v", held, err)
	}
	before := time.Now()
	token := mustAcquire(t, d, "k", owner, ttl)
	after := time.Now()

	h, held, err := d.Inspect(ctx, "k")
	if err != nil || !held {
		t.Fatalf("Inspect = held %v, %v; want true, nil", held, err)
	}
	host, _ := os.Hostname()
	if h.Owner != owner || h.Token != token || h.PID != os.Getpid() || h.Host != host {
		t.Fatalf("Inspect = %+v; want owner %s, token %d, pid %d, host %q", h, owner, token, os.Getpid(), host)
	}
	if h.AcquiredAt.Before(before) || h.AcquiredAt.After(after) {
		t.Fatalf("AcquiredAt %v outside [%v, %v]", h.AcquiredAt, before, after)
	}
	if got := h.ExpiresAt.Sub(h.AcquiredAt); got != ttl {
		t.Fatalf("ExpiresAt - AcquiredAt = %v; want exactly %v", got, ttl)
	}
}

func TestTablesAreIsolated(t *testing.T) {
	ctx := context.Background()
	a, b := memory.New(), memory.New()
	defer a.Close()
	defer b.Close()

	if ok, _ := a.Acquire(ctx, "k", newOwner(), time.Minute); !ok {
		t.Fatal("Acquire on a fresh table failed")
	}
	if ok, _ := b.Acquire(ctx, "k", newOwner(), time.Minute); !ok {
		t.Fatal("a private table saw another table's lock")
	}
}

func TestSharedHandlesShareOneTable(t *testing.T) {
	ctx := context.Background()
	if first, again := memory.SharedTable(), memory.SharedTable(); first != again {
		t.Fatal("SharedTable returned two tables")
	}
	a, b := memory.Shared(), memory.Shared()
	defer a.Close()
	defer b.Close()
	key, owner := "shared-test:"+newOwner(), newOwner()

	if ok, _ := a.Acquire(ctx, key, owner, time.Minute); !ok {
		t.Fatal("Acquire on the shared table failed")
	}
	defer a.Release(ctx, key, owner)
	if ok, _ := b.Acquire(ctx, key, newOwner(), time.Minute); ok {
		t.Fatal("two Shared handles do not contend")
	}
}

func TestInvalidArgumentsAreErrorsNotPanics(t *testing.T) {
	d := newDriver(t, memory.NewTable())
	ctx := context.Background()
	var nilCtx context.Context

	for name, err := range map[string]error{
		"nil ctx":            first(d.Acquire(nilCtx, "k", newOwner(), time.Second)),
		"zero ttl":           first(d.Acquire(ctx, "k", newOwner(), 0)),
		"negative ttl":       first(d.Extend(ctx, "k", newOwner(), -time.Second)),
		"wait with zero ttl": second(d.AcquireWait(ctx, "k", newOwner(), 0)),
		"wait with nil ctx":  second(d.AcquireWait(nilCtx, "k", newOwner(), time.Second)),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if held, _ := d.Exists(ctx, "k"); held {
		t.Fatal("an invalid call took the key")
	}
}

func first[T any](_ T, err error) error  { return err }
func second[T any](_ T, err error) error { return err }

func TestEndedContext(t *testing.T) {
	d := newDriver(t, memory.NewTable())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	if _, err := d.Acquire(ctx, "k", newOwner(), time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled ctx: %v; want context.Canceled", err)
	}
	if _, err := d.AcquireWait(ctx, "k", newOwner(), time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("AcquireWait with a cancelled ctx: %v; want context.Canceled", err)
	}
}

// TestMutualExclusionUnderLoad runs many goroutines on a few handles and
// keys; the race detector and an occupancy count catch any overlap.
func TestMutualExclusionUnderLoad(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	handles := []driver.Driver{newDriver(t, table), newDriver(t, table), newDriver(t, table)}
	keys := []string{"a", "b", "c"}
	var occupied [3]int // guarded by the locks under test; the race detector checks that
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Go(func() {
			d := handles[g%len(handles)]
			for i := range 300 {
				k := (g + i) % len(keys)
				owner := newOwner()
				if g%2 == 0 {
					if _, err := d.(driver.Waiter).AcquireWait(ctx, keys[k], owner, time.Minute); err != nil {
						t.Error(err)
						return
					}
				} else if ok, err := d.Acquire(ctx, keys[k], owner, time.Minute); err != nil || !ok {
					continue
				}
				occupied[k]++
				if occupied[k] != 1 {
					t.Errorf("key %s has %d holders", keys[k], occupied[k])
				}
				occupied[k]--
				if ok, err := d.Release(ctx, keys[k], owner); !ok || err != nil {
					t.Errorf("Release = %v, %v", ok, err)
				}
			}
		})
	}
	wg.Wait()
	if n := memory.Size(table); n != 0 {
		t.Fatalf("table keeps %d entries after every lock was released", n)
	}
}
