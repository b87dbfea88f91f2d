package memory_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

func TestAcquireWaitTakesAFreeKeyAtOnce(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	owner := newOwner()

	token, err := d.AcquireWait(ctx, "k", owner, time.Minute)
	if err != nil || token == 0 {
		t.Fatalf("AcquireWait on a free key = %d, %v", token, err)
	}
	again, err := d.AcquireWait(ctx, "k", owner, time.Minute)
	if err != nil || again != token {
		t.Fatalf("AcquireWait by the holder = %d, %v; want %d, nil", again, err, token)
	}
	if n := memory.ArmedTimers(table); n != 0 {
		t.Fatalf("%d timers armed without waiters", n)
	}
	mustRelease(t, d, "k", owner)
	next, err := d.AcquireWait(ctx, "k", newOwner(), time.Minute)
	if err != nil || next <= token {
		t.Fatalf("AcquireWait on a released key = %d, %v; want a token above %d", next, err, token)
	}
}

func TestWaitersAreServedInFIFOOrder(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	holder := newOwner()
	const waiters = 8

	mustAcquire(t, d, "k", holder, time.Minute)
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range waiters {
		before := table.Waiting("k")
		wg.Go(func() {
			owner := newOwner()
			if _, err := d.AcquireWait(ctx, "k", owner, time.Minute); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if ok, err := d.Release(ctx, "k", owner); !ok || err != nil {
				t.Errorf("waiter %d Release = %v, %v", i, ok, err)
			}
		})
		eventually(t, "the waiter is queued", func() bool { return table.Waiting("k") == before+1 })
	}
	mustRelease(t, d, "k", holder)
	wg.Wait()

	if len(order) != waiters {
		t.Fatalf("%d of %d waiters got the key", len(order), waiters)
	}
	for i, got := range order {
		if got != i {
			t.Fatalf("waiters served in order %v; want 0..%d", order, waiters-1)
		}
	}
	if n := memory.Size(table); n != 0 {
		t.Fatalf("table keeps %d entries after the last release", n)
	}
}

func TestReleaseHandsOffDirectly(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	holder, waiter := newOwner(), newOwner()

	first := mustAcquire(t, d, "k", holder, time.Minute)
	done := startWait(ctx, t, table, d, "k", waiter, time.Minute)
	mustRelease(t, d, "k", holder)

	// The hand-off happened inside Release, so nobody can barge in now.
	if ok, _ := d.Acquire(ctx, "k", newOwner(), time.Minute); ok {
		t.Fatal("a plain Acquire overtook the queued waiter")
	}
	r := result(t, done)
	if r.err != nil || r.token <= first {
		t.Fatalf("waiter got token %d, err %v; want a token above %d", r.token, r.err, first)
	}
	h, held, _ := d.Inspect(ctx, "k")
	if !held || h.Owner != waiter || h.Token != r.token {
		t.Fatalf("holder after hand-off = %+v (held %v); want owner %s token %d", h, held, waiter, r.token)
	}
	if n := memory.ArmedTimers(table); n != 0 {
		t.Fatalf("%d timers armed after the queue emptied", n)
	}
}

func TestForceReleaseHandsOff(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	waiter := newOwner()

	mustAcquire(t, d, "k", newOwner(), time.Minute)
	done := startWait(ctx, t, table, d, "k", waiter, time.Minute)
	if err := d.ForceRelease(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if r := result(t, done); r.err != nil {
		t.Fatal(r.err)
	}
	mustRelease(t, d, "k", waiter)
}

func TestExpiryHandsOffWithoutAnyOtherCall(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	holder, waiter := newOwner(), newOwner()
	const ttl = 500 * time.Millisecond

	start := time.Now()
	first := mustAcquire(t, d, "k", holder, ttl)
	done := startWait(ctx, t, table, d, "k", waiter, time.Minute)
	// Nothing touches the table from here on: only the timer can hand over.
	r := result(t, done)
	waited := time.Since(start)
	if r.err != nil || r.token <= first {
		t.Fatalf("waiter got token %d, err %v; want a token above %d", r.token, r.err, first)
	}
	if waited < ttl {
		t.Fatalf("waiter got the key after %v, before the holder's TTL of %v", waited, ttl)
	}
	if ok, _ := d.Release(ctx, "k", holder); ok {
		t.Fatal("the expired holder could still release the key")
	}
	mustRelease(t, d, "k", waiter)
}

func TestExtendWhileWaitersQueueDelaysTheHandOff(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	holder := newOwner()
	const extended = 300 * time.Millisecond

	mustAcquire(t, d, "k", holder, time.Second)
	done := startWait(ctx, t, table, d, "k", newOwner(), time.Minute)
	start := time.Now()
	if ok, _ := d.Extend(ctx, "k", holder, extended); !ok {
		t.Fatal("Extend failed")
	}
	if r := result(t, done); r.err != nil {
		t.Fatal(r.err)
	}
	if waited := time.Since(start); waited < extended {
		t.Fatalf("waiter got the key %v after the holder extended it by %v", waited, extended)
	}
}

func TestCancelledWaiterLeavesTheQueueInOrder(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	holder, ownerA, ownerB, ownerC := newOwner(), newOwner(), newOwner(), newOwner()

	mustAcquire(t, d, "k", holder, time.Minute)
	doneA := startWait(ctx, t, table, d, "k", ownerA, time.Minute)
	ctxB, cancelB := context.WithCancel(ctx)
	doneB := startWait(ctxB, t, table, d, "k", ownerB, time.Minute)
	doneC := startWait(ctx, t, table, d, "k", ownerC, time.Minute)

	cancelB()
	if r := result(t, doneB); !errors.Is(r.err, context.Canceled) || r.token != 0 {
		t.Fatalf("cancelled waiter returned %d, %v; want 0, context.Canceled", r.token, r.err)
	}
	if n := table.Waiting("k"); n != 2 {
		t.Fatalf("%d waiters queued after one cancelled; want 2", n)
	}

	mustRelease(t, d, "k", holder)
	if r := result(t, doneA); r.err != nil {
		t.Fatal(r.err)
	}
	select {
	case <-doneC:
		t.Fatal("C got the key while A held it")
	default:
	}
	mustRelease(t, d, "k", ownerA)
	if r := result(t, doneC); r.err != nil {
		t.Fatal(r.err)
	}
	mustRelease(t, d, "k", ownerC)
}

func TestWaitDeadlineStopsTheTimer(t *testing.T) {
	table := memory.NewTable()
	d := newDriver(t, table)
	holder := newOwner()

	mustAcquire(t, d, "k", holder, time.Hour)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := d.AcquireWait(ctx, "k", newOwner(), time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("AcquireWait past its deadline: %v; want context.DeadlineExceeded", err)
	}
	if n := table.Waiting("k"); n != 0 {
		t.Fatalf("%d waiters left queued", n)
	}
	if n := memory.ArmedTimers(table); n != 0 {
		t.Fatalf("%d timers armed with no waiter left", n)
	}
	h, held, _ := d.Inspect(context.Background(), "k")
	if !held || h.Owner != holder {
		t.Fatal("a leaving waiter disturbed the holder")
	}
}
