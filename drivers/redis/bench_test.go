package redis

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// The two benchmarks measure the same work side by side on one private
// server: an uncontended acquire+release. BenchmarkCycle goes through the
// Driver (one script each way, with holder metadata, a fencing token and a
// release notice); BenchmarkBare is the least a go-redis user would write:
// SET NX PX, then an EVALSHA compare-and-delete.
//
//	go test -run '^$' -bench 'Cycle|Bare' -benchmem -count 5 .

// bareRelease is the usual compare-and-delete for a plain string lock.
var bareRelease = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// parallelKeys gives each RunParallel goroutine a key of its own, so that
// the parallel runs measure throughput, not contention.
var parallelKeys atomic.Int64

func BenchmarkCycle(b *testing.B) {
	s := startServer(b)
	d := s.open(b)
	ctx := context.Background()
	cycle := func(b *testing.B, key, owner string) {
		if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
			b.Fatalf("Acquire = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			b.Fatalf("Release = %v, %v", ok, err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		key, owner := testKey(b, "cycle"), newOwner()
		b.ReportAllocs()
		for b.Loop() {
			cycle(b, key, owner)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		prefix := testKey(b, "cycle")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key, owner := prefix+strconv.FormatInt(parallelKeys.Add(1), 10), newOwner()
			for pb.Next() {
				cycle(b, key, owner)
			}
		})
	})
}

func BenchmarkBare(b *testing.B) {
	s := startServer(b)
	opts, err := goredis.ParseURL(s.url())
	if err != nil {
		b.Fatal(err)
	}
	opts.ContextTimeoutEnabled = true // as Open sets it
	c := goredis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	cycle := func(b *testing.B, key, owner string) {
		if ok, err := c.SetNX(ctx, key, owner, time.Minute).Result(); err != nil || !ok {
			b.Fatalf("SET NX PX = %v, %v", ok, err)
		}
		if n, err := bareRelease.Run(ctx, c, []string{key}, owner).Int64(); err != nil || n != 1 {
			b.Fatalf("compare-and-delete = %v, %v", n, err)
		}
	}
	b.Run("serial", func(b *testing.B) {
		key, owner := testKey(b, "bare"), newOwner()
		b.ReportAllocs()
		for b.Loop() {
			cycle(b, key, owner)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		prefix := testKey(b, "bare")
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			key, owner := prefix+strconv.FormatInt(parallelKeys.Add(1), 10), newOwner()
			for pb.Next() {
				cycle(b, key, owner)
			}
		})
	})
}

// BenchmarkClusterHandoff measures a hand-off on a 3-master cluster, from
// the holder's Release to the queued waiter's AcquireWait returning, with
// the waiter's notice on a shard channel of the lock's slot (the default on
// Redis 7) and, for comparison, on one channel per Driver that the cluster
// bus relays from the lock's node to the node the waiter listens on (what
// the driver did before, and still does where a cluster has no sharded
// pub/sub). The lock is on another node than the bus channel.
//
//	go test -run '^$' -bench ClusterHandoff -benchtime 300x -count 3 .
func BenchmarkClusterHandoff(b *testing.B) {
	cl := redistest.StartCluster(b, 3, 0, 2*time.Second)
	probe := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs()})
	defer probe.Close()
	ctx := context.Background()
	for _, mode := range []string{"sharded", "cluster-bus"} {
		b.Run(mode, func(b *testing.B) {
			holder, err := Open(cl.URL())
			if err != nil {
				b.Fatal(err)
			}
			defer holder.Close()
			waiter, err := Open(cl.URL(), noPolls)
			if err != nil {
				b.Fatal(err)
			}
			defer waiter.Close()
			if mode == "cluster-bus" {
				waiter.grants.noShards = true
			}
			// A key on another node than the bus channel's.
			busNode, err := probe.MasterForKey(ctx, waiter.grants.channel)
			if err != nil {
				b.Fatal(err)
			}
			var key string
			var rc *goredis.Client
			for i := 0; ; i++ {
				key = testKey(b, "handoff"+strconv.Itoa(i))
				node, err := probe.MasterForKey(ctx, redisKeys(key).lock)
				if err != nil {
					b.Fatal(err)
				}
				if node.Options().Addr != busNode.Options().Addr {
					rc = node
					break
				}
			}
			var took []time.Duration
			for b.Loop() {
				first, next := newOwner(), newOwner()
				if ok, err := holder.Acquire(ctx, key, first, time.Minute); err != nil || !ok {
					b.Fatalf("Acquire = %v, %v", ok, err)
				}
				done := make(chan time.Time, 1)
				go func() {
					if _, err := waiter.AcquireWait(ctx, key, next, time.Minute); err != nil {
						b.Error(err)
					}
					done <- time.Now()
				}()
				// Queued under its channel: the hand-off will be a notice.
				for {
					rec, err := rc.HGet(ctx, redisKeys(key).waiters, next).Result()
					if err == nil && strings.Contains(rec, waiter.grants.channel) {
						break
					}
					time.Sleep(100 * time.Microsecond)
				}
				start := time.Now()
				if ok, err := holder.Release(ctx, key, first); err != nil || !ok {
					b.Fatalf("Release = %v, %v", ok, err)
				}
				took = append(took, (<-done).Sub(start))
				if ok, err := waiter.Release(ctx, key, next); err != nil || !ok {
					b.Fatalf("Release = %v, %v", ok, err)
				}
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "handoff-p50-µs")
			b.ReportMetric(float64(took[len(took)*9/10].Microseconds()), "handoff-p90-µs")
		})
	}
}
