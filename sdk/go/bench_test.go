package lock_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
	lock "github.com/zerotal/lock/sdk/go"
)

// BenchmarkTry is one uncontended Try cycle on the memory driver: validate,
// mint an owner token, acquire, run fn, release. Target: under 1µs.
func BenchmarkTry(b *testing.B) {
	m := lock.New(memory.New())
	defer m.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Try(ctx, "bench", time.Minute, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTryObserved is BenchmarkTry with an Observer whose every
// function is set and does nothing: the cost of the hook itself, which
// BenchmarkTry (no Observer) must not pay.
func BenchmarkTryObserved(b *testing.B) {
	nop := lock.Observer{
		Start:        func(ctx context.Context, _ lock.Call) context.Context { return ctx },
		End:          func(context.Context, lock.Call, error) {},
		Waiting:      func(context.Context, lock.Call) {},
		Acquire:      func(context.Context, lock.AcquireEvent) {},
		Refresh:      func(context.Context, lock.RefreshEvent) {},
		Lost:         func(context.Context, lock.LostEvent) {},
		Release:      func(context.Context, lock.ReleaseEvent) {},
		BackendError: func(context.Context, lock.BackendErrorEvent) {},
	}
	m := lock.New(memory.New(), lock.WithObserver(nop))
	defer m.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Try(ctx, "bench", time.Minute, fn); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTryParallel runs Try cycles on distinct keys from every P.
func BenchmarkTryParallel(b *testing.B) {
	m := lock.New(memory.New())
	defer m.Close()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		key := lock.Key("bench", time.Now().UnixNano())
		for pb.Next() {
			if err := m.Try(ctx, key, time.Minute, fn); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHandoff measures the FIFO hand-off on the memory driver: from a
// holder's Release to the moment the next waiter's Block returns. Target:
// median under 50µs.
func BenchmarkHandoff(b *testing.B) {
	table := memory.NewTable()
	m := lock.New(table.Driver())
	defer m.Close()
	ctx := context.Background()
	lats := make([]time.Duration, 0, b.N)
	holder := m.Make("handoff", time.Minute)
	waiter := m.Make("handoff", time.Minute)
	if ok, _ := holder.Acquire(ctx); !ok {
		b.Fatal("acquire")
	}
	woke := make(chan time.Time)
	for b.Loop() {
		go func() {
			if err := waiter.Block(ctx, lock.WithTimeout(time.Minute)); err != nil {
				b.Error(err)
			}
			woke <- time.Now()
		}()
		waitQueued(b, table, "zerotal_lock:handoff")
		released := time.Now()
		if err := holder.Release(ctx); err != nil {
			b.Fatal(err)
		}
		lats = append(lats, (<-woke).Sub(released))
		holder, waiter = waiter, holder
	}
	_ = holder.Release(ctx)
	slices.Sort(lats)
	b.ReportMetric(float64(lats[len(lats)/2].Nanoseconds()), "ns/handoff-p50")
	b.ReportMetric(float64(lats[len(lats)*99/100].Nanoseconds()), "ns/handoff-p99")
}

// waitQueued returns once a waiter is queued on key in table, so that what
// follows measures a hand-off and not an uncontended acquire.
func waitQueued(tb testing.TB, table *memory.Table, key string) {
	tb.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for table.Waiting(key) == 0 {
		if time.Now().After(deadline) {
			tb.Fatal("no waiter queued within 10s")
		}
		runtime.Gosched()
	}
}
