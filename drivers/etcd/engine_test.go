package etcd

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
	lock "github.com/zerotal/lock/sdk/go"
)

// The engine on top of the driver: blocking Runs on two Drivers (the
// engine's Block queues in AcquireWait), and a Run that outlives its TTL by
// refreshing (Extend).
func TestEngineRunsOnTheDriver(t *testing.T) {
	c := etcdtest.Start(t)
	prefix := testKey(t, "engine") + "/"
	managers := []*lock.Manager{lock.New(openDriver(t, c.URL()), lock.WithPrefix(prefix)), lock.New(openDriver(t, c.URL()), lock.WithPrefix(prefix))}
	for _, m := range managers {
		t.Cleanup(func() { _ = m.Close() })
	}
	ctx := t.Context()

	t.Run("BlockingRuns", func(t *testing.T) {
		const workers, rounds = 4, 5
		var inside, overlaps atomic.Int32
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				m := managers[w%2]
				for range rounds {
					err := m.Block(ctx, "shared", 10*time.Second, func(context.Context) error {
						if inside.Add(1) != 1 {
							overlaps.Add(1)
						}
						time.Sleep(time.Millisecond)
						inside.Add(-1)
						return nil
					}, lock.WithTimeout(30*time.Second))
					if err != nil {
						t.Errorf("Block: %v", err)
						return
					}
				}
			})
		}
		wg.Wait()
		if n := overlaps.Load(); n != 0 {
			t.Errorf("%d runs overlapped", n)
		}
	})

	t.Run("RefreshOutlivesTheTTL", func(t *testing.T) {
		// A refresh every second with 3 s of TTL: a keep-alive on a
		// busy etcd may take most of a second.
		const ttl = 3 * time.Second
		other := managers[1].Make("refreshed", ttl)
		err := managers[0].Try(ctx, "refreshed", ttl, func(ctx context.Context) error {
			deadline := time.Now().Add(2 * ttl)
			for time.Now().Before(deadline) {
				if ok, err := other.Acquire(ctx); err != nil || ok {
					t.Errorf("another handle's Acquire during a refreshed Run = %v, %v; want false", ok, err)
					return nil
				}
				select {
				case <-ctx.Done():
					t.Errorf("the Run's context ended after %v: %v", time.Until(deadline), context.Cause(ctx))
					return nil
				case <-time.After(200 * time.Millisecond):
				}
			}
			return nil
		}, lock.WithRefresh())
		if err != nil {
			t.Fatalf("refreshed Run: %v", err)
		}
		if ok, err := other.Acquire(ctx); err != nil || !ok {
			t.Errorf("Acquire after the Run released = %v, %v; want true", ok, err)
		}
		_ = other.Release(ctx)
	})
}
