package redis

import (
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis routes a command by its first key, read as a string: a Ring picks
// the shard from it and a ClusterClient the slot. Keys that reached it as
// something else would be sharded by their fmt.Sprint form, losing the hash
// tag, so a lock would live on a shard that plain commands on its key never
// look at (and a cluster would answer every call with MOVED).
func TestRingShardsByTheLockKey(t *testing.T) {
	a, b := startServer(t), startServer(t)
	ring := goredis.NewRing(&goredis.RingOptions{
		Addrs: map[string]string{"a": a.addr(), "b": b.addr()},
	})
	t.Cleanup(func() { _ = ring.Close() })
	d := New(ring)
	defer d.Close()
	ctx := t.Context()
	prefix := testKey(t, "ring")
	// With two shards, a key sharded by the wrong string lands on the
	// right one half the time: 24 keys miss it all but once in 2^24 runs.
	for i := range 24 {
		key := prefix + string(rune('a'+i))
		owner := newOwner()
		if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
			t.Fatalf("Acquire(%q) = %v, %v", key, ok, err)
		}
		n, err := ring.Exists(ctx, redisKeys(key).lock).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Fatalf("the lock of %q is not on the shard the ring picks for its key", key)
		}
		if held, err := d.Exists(ctx, key); err != nil || !held {
			t.Fatalf("Exists(%q) = %v, %v", key, held, err)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release(%q) = %v, %v", key, ok, err)
		}
	}
}

// A ClusterClient reads the first key as the Ring does: a string as it is,
// anything else by fmt.Sprint. Every argument list the driver builds must
// then read as the lock key, or the cluster hashes the wrong string.
func TestKeyArgumentsReadAsTheKey(t *testing.T) {
	c := newCall("a{b}c%", newOwner())
	want := redisKeys("a{b}c%")
	if got := fmt.Sprint(c.withLock()[3]); got != want.lock {
		t.Errorf("first key reads as %q; want %q", got, want.lock)
	}
}
