package memory_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

// BenchmarkAcquireRelease is one uncontended Acquire+Release of a reused key:
// the driver's share of the engine's Try cycle.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	d := memory.New()
	defer d.Close()
	owner := newOwner()
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := d.Acquire(ctx, "bench", owner, time.Minute); !ok {
			b.Fatal("Acquire failed")
		}
		if ok, _ := d.Release(ctx, "bench", owner); !ok {
			b.Fatal("Release failed")
		}
	}
}

// BenchmarkAcquireReleaseParallel runs Acquire+Release on distinct keys from
// every goroutine, so what it measures is contention on the table itself.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	ctx := context.Background()
	d := memory.New()
	defer d.Close()
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key, owner := fmt.Sprintf("bench-%d", next.Add(1)), newOwner()
		for pb.Next() {
			if ok, _ := d.Acquire(ctx, key, owner, time.Minute); !ok {
				b.Error("Acquire failed")
				return
			}
			if ok, _ := d.Release(ctx, key, owner); !ok {
				b.Error("Release failed")
				return
			}
		}
	})
}

// BenchmarkHandoff measures the latency from a holder's Release to the
// return of the AcquireWait queued behind it, and reports its median and
// 99th percentile.
func BenchmarkHandoff(b *testing.B) {
	ctx := context.Background()
	table := memory.NewTable()
	d := table.Driver()
	defer d.Close()
	holder, waiter := newOwner(), newOwner()

	start := make(chan struct{})
	woke := make(chan time.Time)
	go func() {
		defer close(woke)
		for range start {
			if _, err := d.AcquireWait(ctx, "bench", waiter, time.Minute); err != nil {
				b.Error(err)
				return
			}
			at := time.Now()
			if ok, _ := d.Release(ctx, "bench", waiter); !ok {
				b.Error("waiter's Release failed")
				return
			}
			woke <- at
		}
	}()

	latencies := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if ok, _ := d.Acquire(ctx, "bench", holder, time.Minute); !ok {
			b.Fatal("holder's Acquire failed")
		}
		start <- struct{}{}
		waitUntilQueued(b, table, "bench")
		released := time.Now()
		if ok, _ := d.Release(ctx, "bench", holder); !ok {
			b.Fatal("holder's Release failed")
		}
		at, ok := <-woke
		if !ok {
			b.FailNow()
		}
		latencies = append(latencies, at.Sub(released))
	}
	b.StopTimer()
	close(start)
	<-woke

	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds()), "ns/handoff-p50")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Nanoseconds()), "ns/handoff-p99")
}

// waitUntilQueued spins until an AcquireWait is queued on key, yielding so
// the waiter can run, and fails after a generous deadline.
func waitUntilQueued(b *testing.B, table *memory.Table, key string) {
	deadline := time.Now().Add(10 * time.Second)
	for table.Waiting(key) == 0 {
		if time.Now().After(deadline) {
			b.Fatal("the waiter never queued")
		}
		runtime.Gosched()
	}
}
