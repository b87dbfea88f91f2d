package redis

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
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
	opts, err := clientOptions(s.url())
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
