package redis

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// A master of a 3-master, 3-replica cluster is killed while workers contend
// for keys on every master. Its replica takes over; the keys on its slots
// are taken again within their TTL plus the node timeout plus a few
// seconds (the driver refreshes the slot map at once when a node cannot be
// reached, and every second anyway); tokens never go back on any key; and
// no two workers of this process ever hold one key at once.
func TestClusterMasterKilledDuringContention(t *testing.T) {
	const (
		nodeTimeout = time.Second
		ttl         = 2 * time.Second
		workers     = 3 // per key
		hold        = 2 * time.Millisecond
		recoverBy   = ttl + nodeTimeout + 8*time.Second
	)
	cl := redistest.StartCluster(t, 3, 1, nodeTimeout)
	probe := goredis.NewClusterClient(&goredis.ClusterOptions{Addrs: cl.Addrs()})
	defer probe.Close()
	ctx := t.Context()

	// Two keys on the master to kill, and one on each of the others.
	victim := cl.Masters[0].Addr()
	prefix := testKey(t, "failover")
	var onVictim, elsewhere []string
	for i := 0; len(onVictim) < 2 || len(elsewhere) < 2; i++ {
		key := prefix + string(rune('a'+i%26)) + string(rune('a'+i/26))
		node, err := probe.MasterForKey(ctx, redisKeys(key).lock)
		if err != nil {
			t.Fatal(err)
		}
		if node.Options().Addr == victim {
			if len(onVictim) < 2 {
				onVictim = append(onVictim, key)
			}
		} else if len(elsewhere) < 2 {
			elsewhere = append(elsewhere, key)
		}
	}
	keys := append(append([]string(nil), onVictim...), elsewhere...)

	type keyState struct {
		mu        sync.Mutex
		holders   atomic.Int32
		lastToken uint64
		overlaps  int
		backwards int
		acquired  []time.Time
	}
	states := map[string]*keyState{}
	for _, k := range keys {
		states[k] = &keyState{}
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var errorsSeen atomic.Int64
	for _, key := range keys {
		st := states[key]
		for range workers {
			d, err := Open(cl.URL() + clusterURLExtra)
			if err != nil {
				t.Fatal(err)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer d.Close()
				for runCtx.Err() == nil {
					owner := newOwner()
					actx, cancel := context.WithTimeout(runCtx, 3*time.Second)
					token, err := d.AcquireWait(actx, key, owner, ttl)
					cancel()
					if err != nil {
						if runCtx.Err() == nil {
							errorsSeen.Add(1)
							time.Sleep(20 * time.Millisecond) // a failed call: do not spin on a dead node
						}
						continue
					}
					if st.holders.Add(1) > 1 {
						st.mu.Lock()
						st.overlaps++
						st.mu.Unlock()
					}
					st.mu.Lock()
					if token <= st.lastToken {
						st.backwards++
					}
					st.lastToken = max(st.lastToken, token)
					st.acquired = append(st.acquired, time.Now())
					st.mu.Unlock()
					time.Sleep(hold)
					st.holders.Add(-1)
					rctx, cancel := context.WithTimeout(context.WithoutCancel(runCtx), 3*time.Second)
					_, _ = d.Release(rctx, key, owner)
					cancel()
				}
			}()
		}
	}
	// Contention before the kill: every key changes hands.
	if !waitUntil(10*time.Second, func() bool {
		for _, st := range states {
			st.mu.Lock()
			n := len(st.acquired)
			st.mu.Unlock()
			if n < 10 {
				return false
			}
		}
		return true
	}) {
		stop()
		wg.Wait()
		t.Fatal("the workers did not get going on every key")
	}
	cl.Masters[0].Kill()
	killed := time.Now()

	recovered := func(key string) time.Duration {
		st := states[key]
		st.mu.Lock()
		defer st.mu.Unlock()
		for _, at := range st.acquired {
			if at.After(killed) {
				return at.Sub(killed)
			}
		}
		return -1
	}
	ok := waitUntil(recoverBy, func() bool {
		for _, k := range keys {
			if recovered(k) < 0 {
				return false
			}
		}
		return true
	})
	stop()
	wg.Wait()
	if !ok {
		for _, k := range keys {
			t.Logf("%s: recovered after %v", k, recovered(k))
		}
		t.Fatalf("keys of the killed master were not taken again within %v", recoverBy)
	}
	for _, k := range keys {
		st := states[k]
		if st.overlaps > 0 || st.backwards > 0 {
			t.Errorf("%s: %d overlapping holds, %d tokens that went back", k, st.overlaps, st.backwards)
		}
		t.Logf("%s (on the killed master: %v): %d acquisitions, first after the kill %v later", k, slices.Contains(onVictim, k), len(st.acquired), recovered(k).Round(time.Millisecond))
	}
	t.Logf("%d failed calls while the master was down", errorsSeen.Load())
	if errorsSeen.Load() == 0 {
		t.Error("no call failed: the kill did not reach the workers, so this test proves nothing")
	}
}

// clusterURLExtra is added to the cluster's URL (tests of the defaults).
var clusterURLExtra = ""
