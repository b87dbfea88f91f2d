package etcd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

// waitBound is how long a waiter that should get the key may take: generous,
// for a loaded machine.
const waitBound = 5 * time.Second

// queueLen returns how many waiters are queued for key (under the default
// prefix).
func queueLen(t *testing.T, cli *clientv3.Client, key string) int {
	t.Helper()
	k := keysFor(DefaultPrefix, key)
	resp, err := cli.Get(t.Context(), k.queue, clientv3.WithRange(k.queueEnd), clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("counting the queue of %q: %v", key, err)
	}
	return int(resp.Count)
}

// awaitQueue waits until key's queue has n waiters, failing t if it does
// not within waitBound.
func awaitQueue(t *testing.T, cli *clientv3.Client, key string, n int) {
	t.Helper()
	if !waitUntil(waitBound, func() bool { return queueLen(t, cli, key) == n }) {
		t.Fatalf("queue of %q has %d waiters after %v; want %d", key, queueLen(t, cli, key), waitBound, n)
	}
}

// waitResult is what an AcquireWait call returned.
type waitResult struct {
	who   int
	token uint64
	err   error
}

// startWait calls d.AcquireWait for owner in a goroutine that reports to
// results as who; the call ends with t at the latest.
func startWait(t *testing.T, d *Driver, key, owner string, who int, results chan<- waitResult) context.CancelFunc {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		token, err := d.AcquireWait(ctx, key, owner, time.Minute)
		results <- waitResult{who, token, err}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return cancel
}

// next returns the next result, failing t if none comes within waitBound.
func next(t *testing.T, results <-chan waitResult, what string) waitResult {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(waitBound):
		t.Fatalf("no AcquireWait returned within %v after %s", waitBound, what)
		return waitResult{}
	}
}

func TestWaitersOnManyDriversAreServedInOrder(t *testing.T) {
	const waiters = 8
	c := etcdtest.Start(t)
	cli := c.Client(t)
	drivers := []*Driver{openDriver(t, c.URL()), openDriver(t, c.URL()), openDriver(t, c.URL())}
	key, holder := testKey(t, "fifo"), newOwner()
	prev, ok, err := drivers[0].AcquireFenced(t.Context(), key, holder, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	results := make(chan waitResult, waiters)
	owners := make([]string, waiters)
	for i := range waiters {
		owners[i] = newOwner()
		startWait(t, drivers[i%len(drivers)], key, owners[i], i, results)
		awaitQueue(t, cli, key, i+1) // queued: the next one comes after it
	}
	if ok, err := drivers[0].Release(t.Context(), key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	var served []int
	for range waiters {
		r := next(t, results, "the previous holder released")
		if r.err != nil {
			t.Fatalf("waiter %d: %v", r.who, r.err)
		}
		if r.token <= prev {
			t.Errorf("waiter %d got token %d after token %d; want tokens to increase", r.who, r.token, prev)
		}
		prev = r.token
		served = append(served, r.who)
		if ok, err := drivers[(r.who+1)%len(drivers)].Release(t.Context(), key, owners[r.who]); err != nil || !ok {
			t.Fatalf("Release by waiter %d = %v, %v", r.who, ok, err)
		}
	}
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(served, want) {
		t.Errorf("waiters queued in the order %v were served in the order %v", want, served)
	}
	awaitQueue(t, cli, key, 0)
}

func TestAcquireDoesNotBargePastTheQueue(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	a, b := openDriver(t, c.URL()), openDriver(t, c.URL())
	ctx := t.Context()
	key, holder, waiter := testKey(t, "barge"), newOwner(), newOwner()
	if ok, err := a.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	results := make(chan waitResult, 2)
	startWait(t, b, key, waiter, 1, results)
	awaitQueue(t, cli, key, 1)
	if ok, err := a.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// Whether the waiter has taken the key yet or not, it is the waiter's.
	if ok, err := a.Acquire(ctx, key, newOwner(), time.Minute); err != nil || ok {
		t.Errorf("Acquire right after a release with a waiter queued = %v, %v; want false", ok, err)
	}
	// The releasing holder asking again waits behind the waiter.
	startWait(t, a, key, holder, 2, results)
	first := next(t, results, "the holder released")
	if first.err != nil || first.who != 1 {
		t.Fatalf("first served: waiter %d (%v); want the queued waiter 1", first.who, first.err)
	}
	if ok, err := b.Release(ctx, key, waiter); err != nil || !ok {
		t.Fatalf("Release by the waiter = %v, %v", ok, err)
	}
	if second := next(t, results, "the waiter released"); second.err != nil || second.who != 2 {
		t.Fatalf("second served: %d (%v); want the old holder, 2", second.who, second.err)
	}
}

func TestCancelledWaiterLeavesTheQueue(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	a, b := openDriver(t, c.URL()), openDriver(t, c.URL())
	key, holder := testKey(t, "cancel"), newOwner()
	if ok, err := a.Acquire(t.Context(), key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	results := make(chan waitResult, 1)
	cancel := startWait(t, b, key, newOwner(), 1, results)
	awaitQueue(t, cli, key, 1)
	cancel()
	if r := next(t, results, "its context was cancelled"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled AcquireWait = %v; want context.Canceled", r.err)
	}
	awaitQueue(t, cli, key, 0)
	// Left: the holder's lease and b's waiter lease. The lease the waiter
	// would have held the lock with is revoked.
	if !waitUntil(waitBound, func() bool { return liveLeases(t, cli) == 2 }) {
		t.Errorf("%d leases live after the cancel; want 2 (the holder's, b's waiter lease)", liveLeases(t, cli))
	}
}

func TestLostWaiterLeaseQueuesAgain(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	a, b := openDriver(t, c.URL()), openDriver(t, c.URL())
	ctx := t.Context()
	key, holder, waiter := testKey(t, "lost"), newOwner(), newOwner()
	if ok, err := a.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	results := make(chan waitResult, 1)
	startWait(t, b, key, waiter, 1, results)
	awaitQueue(t, cli, key, 1)
	// As if b's process had frozen for longer than the waiter TTL: its
	// waiter lease is gone, and its queue key with it.
	id, _ := b.waiters.current()
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	awaitQueue(t, cli, key, 1) // queued again, on a new lease
	if again, _ := b.waiters.current(); again == id || again == 0 {
		t.Fatalf("waiter lease after the loss: %x; want a new one (was %x)", again, id)
	}
	if ok, err := a.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if r := next(t, results, "the holder released"); r.err != nil {
		t.Fatalf("AcquireWait after its waiter lease was lost: %v", r.err)
	}
}

func TestGivingUpFreesAKeyTheWaiterTook(t *testing.T) {
	c := etcdtest.Start(t)
	d := openDriver(t, c.URL())
	ctx := t.Context()
	key, owner := testKey(t, "given-up"), newOwner()
	// The Txn that took the key ran, and its answer was lost with the
	// wait (the context ended as it came back): the waiter gives up.
	w := &waiter{d: d, k: keysFor(d.prefix, key), owner: owner, secs: 60}
	if token, err := w.wait(ctx); err != nil || token == 0 {
		t.Fatalf("wait on a free key = %d, %v", token, err)
	}
	w.stopRenewing()
	w.giveUp()
	if !waitUntil(waitBound, func() bool {
		held, err := d.Exists(ctx, key)
		return err == nil && !held
	}) {
		t.Fatal("a key taken by a waiter that gave up is still held: it would stay held by nobody for its TTL")
	}
}

// The child process of TestDeadWaiterDoesNotHoldUpTheQueue waits for the key
// in $waitChildKeyEnv on the cluster in $childURLEnv until it is killed.
const waitChildKeyEnv = "ZEROTAL_ETCD_TEST_WAIT_KEY"

// runWaitChild is that child's life; it never returns.
func runWaitChild(key string) {
	d, err := Open(os.Getenv(childURLEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wait child:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = d.AcquireWait(ctx, key, newOwner(), time.Minute)
	fmt.Fprintln(os.Stderr, "wait child: AcquireWait returned:", err)
	os.Exit(3)
}

func TestDeadWaiterDoesNotHoldUpTheQueue(t *testing.T) {
	const waiterTTL = time.Second
	c := etcdtest.Start(t)
	cli := c.Client(t)
	a, b := openDriver(t, c.URL()), openDriver(t, c.URL())
	ctx := t.Context()
	key, holder := testKey(t, "dead-waiter"), newOwner()
	if ok, err := a.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	child := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(),
		childURLEnv+"="+c.URL()+"/?waiter_ttl="+waiterTTL.String(),
		waitChildKeyEnv+"="+key)
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = child.Process.Kill(); _ = child.Wait() })
	awaitQueue(t, cli, key, 1) // the child is first in line
	results := make(chan waitResult, 1)
	startWait(t, b, key, newOwner(), 1, results)
	awaitQueue(t, cli, key, 2)
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if ok, err := a.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	r := next(t, results, "the waiter ahead was killed and the holder released")
	if r.err != nil {
		t.Fatalf("AcquireWait behind a killed waiter: %v", r.err)
	}
	// The server's lessor looks for expired leases every 500ms, then
	// deletes their keys through the log; the rest is room for a loaded
	// machine. Without the waiter lease, the wait would be the dead
	// waiter's lock TTL, a minute.
	if waited := time.Since(killed); waited > waiterTTL+5*time.Second {
		t.Errorf("the waiter behind a killed one got the key %v after the kill; want within the waiter TTL %v and the server's expiry delay", waited, waiterTTL)
	} else {
		t.Logf("the waiter behind a killed one got the key %v after the kill (waiter TTL %v)", waited.Round(time.Millisecond), waiterTTL)
	}
}
