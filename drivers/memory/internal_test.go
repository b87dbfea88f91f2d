package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestExpiredLocksAreReaped takes many keys without releasing them, lets
// them all expire at once and checks that one more operation leaves the
// table (map and heap alike) as small as if they had never existed. The locks
// get a long TTL so that all of them are live together however slow the
// machine is; the test then moves the table's epoch back instead of sleeping.
func TestExpiredLocksAreReaped(t *testing.T) {
	ctx := context.Background()
	table := NewTable()
	d := table.Driver()
	defer d.Close()
	const keys = 100_000

	for i := range keys {
		key, owner := fmt.Sprintf("key-%d", i), fmt.Sprintf("%032x", i)
		if ok, err := d.Acquire(ctx, key, owner, time.Hour); !ok || err != nil {
			t.Fatalf("Acquire(%s) = %v, %v", key, ok, err)
		}
	}
	if n := table.size(); n != keys {
		t.Fatalf("table holds %d entries; want %d", n, keys)
	}
	table.mu.Lock()
	table.epoch = table.epoch.Add(-2 * time.Hour)
	table.mu.Unlock()

	if held, err := d.Exists(ctx, "unrelated"); held || err != nil {
		t.Fatalf("Exists = %v, %v", held, err)
	}
	table.mu.Lock()
	defer table.mu.Unlock()
	// One freed entry may stay parked for reuse.
	if n := len(table.entries); n > 1 || table.parked == nil && n != 0 {
		t.Fatalf("table keeps %d entries after every lock expired", n)
	}
	if table.peak >= shrinkMin || cap(table.expiry) >= shrinkMin {
		t.Fatalf("map peak %d and heap capacity %d were not shrunk", table.peak, cap(table.expiry))
	}
	if len(table.spare) > maxSpare {
		t.Fatalf("%d spare entries kept; want at most %d", len(table.spare), maxSpare)
	}
}

// TestGrantWinsOverCancellation makes a hand-off and the waiter's ctx end at
// the same instant, many times, so that the waiter's select sees both ready:
// whichever case it picks, the key was handed over and must be reported so.
func TestGrantWinsOverCancellation(t *testing.T) {
	table := NewTable()
	d := table.Driver()
	defer d.Close()
	holder := fmt.Sprintf("%032x", 0)

	for i := range 100 {
		waiter := fmt.Sprintf("%032x", i+1)
		if ok, _ := d.Acquire(context.Background(), "k", holder, time.Minute); !ok {
			t.Fatal("Acquire failed")
		}
		ctx, cancel := context.WithCancel(context.Background())
		type outcome struct {
			token uint64
			err   error
		}
		done := make(chan outcome, 1)
		go func() {
			token, err := d.AcquireWait(ctx, "k", waiter, time.Minute)
			done <- outcome{token, err}
		}()
		deadline := time.Now().Add(10 * time.Second)
		for table.Waiting("k") != 1 {
			if time.Now().After(deadline) {
				t.Fatal("waiter never queued")
			}
			time.Sleep(50 * time.Microsecond)
		}

		table.mu.Lock()
		cancel()
		table.vacate(table.entries["k"], table.now())
		table.mu.Unlock()

		got := <-done
		if got.err != nil || got.token == 0 {
			t.Fatalf("round %d: granted waiter returned %d, %v; want its token and nil", i, got.token, got.err)
		}
		if ok, _ := d.Release(context.Background(), "k", waiter); !ok {
			t.Fatalf("round %d: the waiter did not hold the key", i)
		}
	}
}

// TestExpiryHeapKeepsOrderAndIndexes drives the heap through random pushes,
// fixes and removals and checks that it yields entries soonest first and that
// every entry knows its position.
func TestExpiryHeapKeepsOrderAndIndexes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h expiryHeap
	var live []*entry
	check := func() {
		t.Helper()
		for i, e := range h {
			if e.index != i {
				t.Fatalf("entry at %d records index %d", i, e.index)
			}
			if i > 0 && h[(i-1)/2].deadline > e.deadline {
				t.Fatalf("heap order broken at %d", i)
			}
		}
	}
	for range 5000 {
		switch op := rng.IntN(4); {
		case op < 2 || len(live) == 0:
			e := &entry{deadline: time.Duration(rng.IntN(1000))}
			h.push(e)
			live = append(live, e)
		case op == 2:
			e := live[rng.IntN(len(live))]
			e.deadline = time.Duration(rng.IntN(1000))
			h.fix(e)
		default:
			i := rng.IntN(len(live))
			h.remove(live[i])
			if live[i].index != -1 {
				t.Fatal("removed entry keeps an index")
			}
			live = slices.Delete(live, i, i+1)
		}
		check()
	}
	var popped []time.Duration
	for len(h) > 0 {
		popped = append(popped, h[0].deadline)
		h.remove(h[0])
	}
	if len(popped) != len(live) || !slices.IsSorted(popped) {
		t.Fatalf("draining gave %d deadlines (want %d), sorted=%v", len(popped), len(live), slices.IsSorted(popped))
	}
}
