package etcd

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

// contention is workers on several Drivers taking one key in turn, with
// AcquireWait and Release, and recording every critical section.
type contention struct {
	inside, overlaps, errs atomic.Int64

	mu       sync.Mutex
	entries  []time.Time // when each critical section began, in the order they began
	tokens   []uint64    // their tokens, in the same order
	firstErr error
}

// hold is how long a worker keeps the key: short, so that hand-offs
// dominate, against a TTL long enough that no lock expires while held,
// failovers included (a new leader gives every lease its full TTL again).
const (
	contentionHold = 2 * time.Millisecond
	contentionTTL  = 10 * time.Second
)

// run runs one worker on d until ctx ends.
func (c *contention) run(ctx context.Context, d *Driver, key string) {
	for ctx.Err() == nil {
		owner := newOwner()
		token, err := d.AcquireWait(ctx, key, owner, contentionTTL)
		if err != nil {
			if ctx.Err() == nil {
				c.fail(err)
			}
			continue
		}
		if c.inside.Add(1) != 1 {
			c.overlaps.Add(1)
		}
		c.mu.Lock() // inside the critical section: appends are in lock order
		c.entries = append(c.entries, time.Now())
		c.tokens = append(c.tokens, token)
		c.mu.Unlock()
		time.Sleep(contentionHold)
		c.inside.Add(-1)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		if _, err := d.Release(rctx, key, owner); err != nil {
			c.fail(err)
		}
		cancel()
	}
}

func (c *contention) fail(err error) {
	c.errs.Add(1)
	c.mu.Lock()
	if c.firstErr == nil {
		c.firstErr = err
	}
	c.mu.Unlock()
}

// count returns how many critical sections have begun.
func (c *contention) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// pauseAfter returns the longest pause between critical sections that
// began after at (counting from at itself), up to the first n sections
// after it: how long the cluster's failure at at stopped the lock.
func (c *contention) pauseAfter(at time.Time, n int) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	i, _ := slices.BinarySearchFunc(c.entries, at, func(e, t time.Time) int { return e.Compare(t) })
	prev, longest := at, time.Duration(0)
	for _, e := range c.entries[i:min(i+n, len(c.entries))] {
		longest = max(longest, e.Sub(prev))
		prev = e
	}
	return longest
}

// awaitProgress waits until n more critical sections than since have begun,
// failing t if they do not within bound.
func (c *contention) awaitProgress(t *testing.T, since, n int, bound time.Duration, what string) {
	t.Helper()
	if !waitUntil(bound, func() bool { return c.count() >= since+n }) {
		t.Fatalf("%s: %d acquisitions in %v, want %d (errors: %d, first: %v)", what, c.count()-since, bound, n, c.errs.Load(), c.firstErr)
	}
}

func TestClusterKeepsExclusionThroughKilledMembers(t *testing.T) {
	const (
		drivers  = 3
		workers  = 6
		progress = 20 // acquisitions that show the lock works again
		recovery = 20 * time.Second
	)
	c := etcdtest.StartCluster(t, 3)
	key := testKey(t, "failover")
	ds := make([]*Driver, drivers)
	for i := range ds {
		ds[i] = openDriver(t, c.URL())
	}
	var cont contention
	ctx, stop := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() { cont.run(ctx, ds[w%drivers], key) })
	}
	defer func() {
		stop()
		wg.Wait()
	}()
	cont.awaitProgress(t, 0, progress, recovery, "before any fault")

	// kill kills m, waits for the lock to work again and returns how long
	// it stopped.
	kill := func(m *etcdtest.Member, role string) time.Duration {
		t.Helper()
		before := cont.count()
		killed := time.Now()
		m.Kill()
		cont.awaitProgress(t, before, progress, recovery, "after the "+role+" was killed")
		pause := cont.pauseAfter(killed, progress)
		t.Logf("%s %s killed with SIGKILL: the lock stopped for %v at most (%d acquisitions before)", role, m.Name, pause.Round(time.Millisecond), before)
		return pause
	}

	leader := c.WaitLeader(t, 10*time.Second)
	leaderPause := kill(leader, "leader")
	leader.Restart(t)
	cont.awaitProgress(t, cont.count(), progress, recovery, "after the old leader came back")

	newLeader := c.WaitLeader(t, 10*time.Second)
	var follower *etcdtest.Member
	for _, m := range c.Members {
		if m != newLeader {
			follower = m
			break
		}
	}
	followerPause := kill(follower, "follower")
	follower.Restart(t)
	cont.awaitProgress(t, cont.count(), progress, recovery, "after the follower came back")
	stop()
	wg.Wait()

	if n := cont.overlaps.Load(); n != 0 {
		t.Errorf("%d critical sections began while another was running: mutual exclusion broke", n)
	}
	for i := 1; i < len(cont.tokens); i++ {
		if cont.tokens[i] <= cont.tokens[i-1] {
			t.Errorf("acquisition %d got token %d after token %d: tokens must strictly increase", i, cont.tokens[i], cont.tokens[i-1])
			break
		}
	}
	if n := cont.errs.Load(); n != 0 {
		t.Errorf("%d AcquireWait or Release calls failed (first: %v); a failover must only delay them", n, cont.firstErr)
	}
	t.Logf("%d acquisitions; longest pause after killing the leader %v, a follower %v",
		cont.count(), leaderPause.Round(time.Millisecond), followerPause.Round(time.Millisecond))
}
