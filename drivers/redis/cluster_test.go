package redis

import (
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// startCluster starts a private one-node Redis Cluster that owns every slot.
// One node is enough to test slot placement: a cluster node refuses a script
// whose keys span slots (CROSSSLOT) even when it owns them all.
func startCluster(t *testing.T) (*server, *goredis.ClusterClient) {
	t.Helper()
	s := startServer(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	rc := s.client(t)
	ctx := t.Context()
	if err := rc.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	if !waitUntil(15*time.Second, func() bool {
		info, err := rc.ClusterInfo(ctx).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	}) {
		t.Fatal("the one-node cluster did not reach cluster_state:ok")
	}
	cc := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: []string{s.addr()}})
	t.Cleanup(func() { _ = cc.Close() })
	return s, cc
}

func TestClusterKeysOfAScriptShareASlot(t *testing.T) {
	s, cc := startCluster(t)
	ctx := t.Context()

	// The cluster does check: braces around a key that starts with '}'
	// leave an empty hash tag, and the two keys land in different slots.
	naive := cc.Eval(ctx, "return 1", []string{"{}x}", "{}x}:fence"})
	if err := naive.Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("EVAL over {}x} and {}x}:fence = %v; want CROSSSLOT, or this test proves nothing", err)
	}

	d := New(cc)
	defer d.Close()
	// Keys with and without a prefix: a key that starts with '}' is the one
	// that naive braces would split across slots. The server is private, so
	// bare keys touch nothing shared.
	prefix := testKey(t, "")
	var keys []string
	for _, name := range []string{"plain", "}x", "{a}b", "}", "{", "{}", "%7D", "a%b}c{d"} {
		keys = append(keys, name, prefix+name)
	}
	for _, key := range keys {
		owner := newOwner()
		token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute)
		if err != nil || !ok || token == 0 {
			t.Fatalf("AcquireFenced(%q) = %d, %v, %v", key, token, ok, err)
		}
		if again, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute); err != nil || !ok || again != token {
			t.Fatalf("re-acquire of %q = %d, %v, %v; want %d", key, again, ok, err, token)
		}
		if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || !ok {
			t.Fatalf("Extend(%q) = %v, %v", key, ok, err)
		}
		if h, held, err := d.Inspect(ctx, key); err != nil || !held || h.Owner != owner {
			t.Fatalf("Inspect(%q) = %+v, %v, %v", key, h, held, err)
		}
		if held, err := d.Exists(ctx, key); err != nil || !held {
			t.Fatalf("Exists(%q) = %v, %v", key, held, err)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release(%q) = %v, %v", key, ok, err)
		}
		if err := d.ForceRelease(ctx, key); err != nil {
			t.Fatalf("ForceRelease(%q): %v", key, err)
		}
	}

	// Hand-off notices travel through the cluster too, on a shard channel
	// of the lock's slot: the script publishes on the key's node, which the
	// waiter listens to.
	holder, waiter := New(cc), New(cc, noPolls)
	defer holder.Close()
	defer waiter.Close()
	key, first, next := prefix+"}handoff", newOwner(), newOwner()
	if ok, err := holder.Acquire(ctx, key, first, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	rc := s.client(t)
	waitQueued(t, rc, key, 1)
	waitShardListening(t, rc, waiter, key)
	if ok, err := holder.Release(ctx, key, first); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if r := awaitResult(t, result, handOffBound, "the holder released, through a cluster client"); r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
	mustHold(t, holder, key, next)
}

// waitShardListening waits until d's shard channel for key has its
// subscriber on the node rc reaches.
func waitShardListening(t *testing.T, rc *goredis.Client, d *Driver, key string) {
	t.Helper()
	channel := d.grants.channel + ":" + redisKeys(key).lock
	if !waitUntil(handOffBound, func() bool {
		counts, err := rc.PubSubShardNumSub(t.Context(), channel).Result()
		return err == nil && counts[channel] == 1
	}) {
		t.Fatalf("no subscriber on shard channel %q after %v", channel, handOffBound)
	}
}
