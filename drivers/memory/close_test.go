package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

func TestCloseIsIdempotentAndFailsLaterCalls(t *testing.T) {
	ctx := context.Background()
	d := memory.New()
	owner := newOwner()
	if err := d.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	calls := map[string]error{
		"Acquire":      second(d.Acquire(ctx, "k", owner, time.Second)),
		"AcquireWait":  second(d.AcquireWait(ctx, "k", owner, time.Second)),
		"Release":      second(d.Release(ctx, "k", owner)),
		"ForceRelease": d.ForceRelease(ctx, "k"),
		"Exists":       second(d.Exists(ctx, "k")),
		"Extend":       second(d.Extend(ctx, "k", owner, time.Second)),
	}
	_, _, err := d.AcquireFenced(ctx, "k", owner, time.Second)
	calls["AcquireFenced"] = err
	_, _, err = d.Inspect(ctx, "k")
	calls["Inspect"] = err
	for name, err := range calls {
		if !errors.Is(err, memory.ErrClosed) {
			t.Errorf("%s after Close: %v; want ErrClosed", name, err)
		}
	}
}

func TestCloseCancelsOnlyThisHandlesWaits(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	holderHandle := newDriver(t, table)
	closing := table.Driver()
	other := newDriver(t, table)
	holder, survivor := newOwner(), newOwner()

	mustAcquire(t, holderHandle, "k", holder, time.Minute)
	mustAcquire(t, holderHandle, "solo", holder, time.Minute)
	cancelled := startWait(ctx, t, table, closing, "k", newOwner(), time.Minute)
	kept := startWait(ctx, t, table, other, "k", survivor, time.Minute)
	soloCancelled := startWait(ctx, t, table, closing, "solo", newOwner(), time.Minute)
	if n := memory.ArmedTimers(table); n != 2 {
		t.Fatalf("%d timers armed for two keys with waiters; want 2", n)
	}

	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	for _, done := range []<-chan waitResult{cancelled, soloCancelled} {
		if r := result(t, done); !errors.Is(r.err, memory.ErrClosed) || r.token != 0 {
			t.Fatalf("wait on a closed handle returned %d, %v; want 0, ErrClosed", r.token, r.err)
		}
	}
	// "solo" lost its only waiter, so its timer has no reason to exist.
	if n := memory.ArmedTimers(table); n != 1 {
		t.Fatalf("%d timers armed after Close; want 1 (for the other handle's waiter)", n)
	}

	mustRelease(t, holderHandle, "k", holder)
	if r := result(t, kept); r.err != nil {
		t.Fatalf("other handle's waiter: %v", r.err)
	}
	mustRelease(t, other, "k", survivor)
	if n := memory.ArmedTimers(table); n != 0 {
		t.Fatalf("%d timers armed with no waiters left", n)
	}
}

func TestLocksOfAClosedHandleLastUntilTheirTTL(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	closing := table.Driver()
	other := newDriver(t, table)
	const ttl = 250 * time.Millisecond

	start := time.Now()
	token := mustAcquire(t, closing, "k", newOwner(), ttl)
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if held, _ := other.Exists(ctx, "k"); !held {
		t.Fatal("Close freed the handle's lock before its TTL")
	}
	next, err := other.AcquireWait(ctx, "k", newOwner(), time.Minute)
	if err != nil || next <= token {
		t.Fatalf("AcquireWait after the closed handle's lock = %d, %v; want a token above %d", next, err, token)
	}
	if waited := time.Since(start); waited < ttl {
		t.Fatalf("got the key after %v, before the TTL of %v", waited, ttl)
	}
}
