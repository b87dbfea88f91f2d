package redis

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// handOffBound is how long a waiter may take to get a key handed to it by a
// notice: generous, for a loaded machine; a poll-driven hand-off in these
// tests would take an hour (WithWaitPoll(time.Hour)).
const handOffBound = 5 * time.Second

// noPolls makes a Driver's waiters poll only when they are first in line and
// the holder's TTL ends, so that a hand-off within handOffBound proves a
// notice delivered it.
var noPolls = WithWaitPoll(time.Hour)

// waitResult is what an AcquireWait call returned, and when.
type waitResult struct {
	token uint64
	err   error
	at    time.Time
}

// startWait calls d.AcquireWait in a goroutine and returns its result
// channel; the test's cleanup cancels the call and waits for it.
func startWait(t *testing.T, d *Driver, key, owner string, ttl time.Duration) (<-chan waitResult, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	result := make(chan waitResult, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		token, err := d.AcquireWait(ctx, key, owner, ttl)
		result <- waitResult{token, err, time.Now()}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return result, cancel
}

// awaitResult returns the result from ch, failing t if none comes within
// bound.
func awaitResult(t *testing.T, ch <-chan waitResult, bound time.Duration, what string) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(bound):
		t.Fatalf("AcquireWait still blocked %v after %s", bound, what)
		return waitResult{}
	}
}

// expectBlocked fails t if ch delivers within a short while.
func expectBlocked(t *testing.T, ch <-chan waitResult, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("AcquireWait returned (%d, %v) %s; want it still waiting", r.token, r.err, what)
	case <-time.After(100 * time.Millisecond):
	}
}

// waitQueued waits until key's queue holds n waiters.
func waitQueued(t *testing.T, rc *goredis.Client, key string, n int64) {
	t.Helper()
	q := redisKeys(key).queue
	var got int64
	if !waitUntil(handOffBound, func() bool {
		var err error
		got, err = rc.LLen(t.Context(), q).Result()
		return err == nil && got == n
	}) {
		t.Fatalf("queue of %s holds %d waiters after %v; want %d", key, got, handOffBound, n)
	}
}

// waitQueuedListening waits until key's queue holds n waiters, each queued
// under its Driver's notice channel: a waiter queues without one until its
// subscription is confirmed, then queues again under it, and a test that
// changes the key before that second attempt races with it.
func waitQueuedListening(t *testing.T, rc *goredis.Client, key string, n int) {
	t.Helper()
	k := redisKeys(key)
	var recs map[string]string
	if !waitUntil(handOffBound, func() bool {
		var err error
		if recs, err = rc.HGetAll(t.Context(), k.waiters).Result(); err != nil || len(recs) != n {
			return false
		}
		for _, rec := range recs {
			if strings.Contains(rec, "\n\n") { // an empty channel
				return false
			}
		}
		got, err := rc.LLen(t.Context(), k.queue).Result()
		return err == nil && got == int64(n)
	}) {
		t.Fatalf("waiters of %s after %v: %q; want %d, each under a notice channel", key, handOffBound, recs, n)
	}
}

// waitListening waits until a connection is subscribed to d's channel, so
// that its waiters are queued under it (they queue without it until then).
func waitListening(t *testing.T, rc *goredis.Client, d *Driver) {
	t.Helper()
	if !waitUntil(handOffBound, func() bool {
		counts, err := rc.PubSubNumSub(t.Context(), d.grants.channel).Result()
		return err == nil && counts[d.grants.channel] == 1
	}) {
		t.Fatalf("no subscriber on %q after %v", d.grants.channel, handOffBound)
	}
}

// mustHold fails t unless owner holds key according to d.
func mustHold(t *testing.T, d *Driver, key, owner string) {
	t.Helper()
	h, held, err := d.Inspect(t.Context(), key)
	if err != nil || !held || h.Owner != owner {
		t.Fatalf("Inspect(%s) = %+v, %v, %v; want held by %s", key, h, held, err, owner)
	}
}

func TestHandOffOnReleaseByNotice(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	holder, waiter := s.open(t), New(rc, noPolls)
	defer waiter.Close()
	ctx := t.Context()
	key, first, next := testKey(t, "handoff"), newOwner(), newOwner()

	prev, ok, err := holder.AcquireFenced(ctx, key, first, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueuedListening(t, rc, key, 1)
	expectBlocked(t, result, "while the key is held")
	if ok, err := holder.Release(ctx, key, first); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	r := awaitResult(t, result, handOffBound, "the holder released the key")
	if r.err != nil || r.token <= prev {
		t.Fatalf("AcquireWait = %d, %v; want a token above %d", r.token, r.err, prev)
	}
	mustHold(t, holder, key, next)
	if h, _, _ := holder.Inspect(ctx, key); h.Token != r.token {
		t.Fatalf("the lock records token %d; AcquireWait returned %d", h.Token, r.token)
	}
	if n, err := rc.Exists(ctx, redisKeys(key).queue, redisKeys(key).waiters).Result(); err != nil || n != 0 {
		t.Fatalf("%d queue keys remain after the last waiter was served (%v); want none", n, err)
	}
}

func TestReleaserQueuesBehindWaiters(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	a, b := New(rc, noPolls), New(rc, noPolls)
	defer a.Close()
	defer b.Close()
	ctx := t.Context()
	key, holder, waiting := testKey(t, "barging"), newOwner(), newOwner()

	if ok, err := a.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, b, key, waiting, time.Minute)
	waitQueuedListening(t, rc, key, 1)
	if ok, err := a.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// The releaser asks again at once: the key is the waiter's already.
	again := newOwner()
	if ok, err := a.Acquire(ctx, key, again, time.Minute); err != nil || ok {
		t.Fatalf("Acquire by the releaser right after its Release = %v, %v; want false: the key went to the waiter", ok, err)
	}
	queued, _ := startWait(t, a, key, again, time.Minute)
	if r := awaitResult(t, result, handOffBound, "the holder released"); r.err != nil {
		t.Fatalf("the waiter's AcquireWait: %v", r.err)
	}
	waitQueuedListening(t, rc, key, 1)
	expectBlocked(t, queued, "behind the waiter that holds the key")
	if ok, err := b.Release(ctx, key, waiting); err != nil || !ok {
		t.Fatalf("Release by the waiter = %v, %v", ok, err)
	}
	if r := awaitResult(t, queued, handOffBound, "the waiter released"); r.err != nil {
		t.Fatalf("the releaser's AcquireWait: %v", r.err)
	}
	mustHold(t, a, key, again)
}

func TestFreeKeyWithQueueGoesToTheWaiterNotToAcquire(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	d, waiter := s.open(t), New(rc, noPolls)
	defer waiter.Close()
	ctx := t.Context()
	key, holder, next := testKey(t, "expired"), newOwner(), newOwner()

	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueuedListening(t, rc, key, 1)
	// The lock vanishes as on expiry: no script runs, nobody is told.
	if err := rc.Del(ctx, redisKeys(key).lock).Err(); err != nil {
		t.Fatal(err)
	}
	expectBlocked(t, result, "after an expiry nobody has seen yet")
	token, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || ok || token != 0 {
		t.Fatalf("AcquireFenced of a free key with a waiter queued = %d, %v, %v; want 0, false: no barging", token, ok, err)
	}
	if r := awaitResult(t, result, handOffBound, "Acquire found the key free"); r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
	mustHold(t, d, key, next)
}

func TestFirstWaiterTakesAnExpiredKeyWithoutNotice(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	d, waiter := s.open(t), New(rc, noPolls)
	defer waiter.Close()
	const ttl = 300 * time.Millisecond
	key, holder, next := testKey(t, "ttl"), newOwner(), newOwner()

	// The lease starts between sent and acquired: the wait can end no
	// sooner than a TTL after sent, and should end soon after a TTL
	// after acquired.
	sent := time.Now()
	if ok, err := d.Acquire(t.Context(), key, holder, ttl); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	acquired := time.Now()
	result, _ := startWait(t, waiter, key, next, time.Minute)
	// Polls are an hour apart: only the first waiter's poll at the
	// holder's expiry can end this wait in time.
	r := awaitResult(t, result, ttl+handOffBound, "the holder's TTL ran out")
	if r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
	if late := r.at.Sub(acquired); r.at.Sub(sent) < ttl-10*time.Millisecond || late > ttl+2*time.Second {
		t.Fatalf("AcquireWait returned %v after a %v lock was taken; want about its TTL", late, ttl)
	}
	mustHold(t, d, key, next)
}

func TestWaitersAreServedInOrder(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	drivers := []*Driver{New(rc, noPolls), New(rc, noPolls), New(rc, noPolls)}
	for _, d := range drivers {
		defer d.Close()
	}
	ctx := t.Context()
	key, holder := testKey(t, "fifo"), newOwner()
	if ok, err := drivers[0].Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	const waiters = 6
	owners := make([]string, waiters)
	results := make([]<-chan waitResult, waiters)
	for i := range waiters {
		owners[i] = newOwner()
		results[i], _ = startWait(t, drivers[i%3], key, owners[i], time.Minute)
		// The queue's order is the order the server saw them in.
		waitQueued(t, rc, key, int64(i+1))
	}
	waitQueuedListening(t, rc, key, waiters)
	if ok, err := drivers[0].Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	for i := range waiters {
		r := awaitResult(t, results[i], handOffBound, fmt.Sprintf("waiter #%d's predecessor released", i))
		if r.err != nil {
			t.Fatalf("waiter #%d: %v", i, r.err)
		}
		for j := i + 1; j < waiters; j++ {
			select {
			case r := <-results[j]:
				t.Fatalf("waiter #%d got the key (%v) while #%d held it", j, r.err, i)
			default:
			}
		}
		if ok, err := drivers[(i+1)%3].Release(ctx, key, owners[i]); err != nil || !ok {
			t.Fatalf("Release by waiter #%d = %v, %v", i, ok, err)
		}
	}
}

func TestCancelledWaiterLeavesTheQueue(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	d := s.open(t)
	ctx := t.Context()
	key, holder := testKey(t, "leave"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, cancel := startWait(t, d, key, newOwner(), time.Minute)
	waitQueued(t, rc, key, 1)
	cancel()
	if r := awaitResult(t, result, handOffBound, "its ctx was cancelled"); r.err == nil {
		t.Fatal("AcquireWait with a cancelled ctx returned nil")
	}
	// It leaves in the background: AcquireWait returns at once.
	k := redisKeys(key)
	var n int64
	if !waitUntil(handOffBound, func() bool {
		var err error
		n, err = rc.Exists(ctx, k.queue, k.waiters).Result()
		return err == nil && n == 0
	}) {
		t.Fatalf("%d queue keys remain %v after the only waiter left; want none", n, handOffBound)
	}
	// With nobody queued, the release is a plain delete again.
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if held, err := d.Exists(ctx, key); err != nil || held {
		t.Fatalf("Exists after Release = %v, %v; want false", held, err)
	}
}

func TestLeaveAfterHandOffPassesTheKeyOn(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	ctx := t.Context()
	key, holder := testKey(t, "gone"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// Two waiters queued by single attempts, with no goroutine waiting:
	// the first is handed the key but never learns it.
	gone, next := newCall(key, newOwner()), newCall(key, newOwner())
	for _, c := range []*scriptCall{gone, next} {
		c.ttl = 60_000
		if token, _, _, err := d.waitAttempt(ctx, c, d.noChannelArg); err != nil || token != 0 {
			t.Fatalf("waitAttempt = %d, %v; want queued", token, err)
		}
	}
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	mustHold(t, d, key, gone.owner)
	// Its wait ends (ctx, Close): leaving gives the key to the next.
	d.leave(gone)
	if !waitUntil(handOffBound, func() bool {
		h, held, err := d.Inspect(ctx, key)
		return err == nil && held && h.Owner == next.owner
	}) {
		t.Fatalf("the key was not passed on to the next waiter within %v of the leave", handOffBound)
	}
	if token, _, _, err := d.waitAttempt(ctx, next, d.noChannelArg); err != nil || token == 0 {
		t.Fatalf("the next waiter's poll = %d, %v; want its token", token, err)
	}
}

// queueRecord puts owner in key's queue directly, as a waiter of a Driver
// listening on channel whose last poll set deadline.
func queueRecord(t *testing.T, rc *goredis.Client, key, owner, channel string, deadline time.Time) {
	t.Helper()
	k := redisKeys(key)
	rec := fmt.Sprintf("%d\n60000\n%s\n1\nhost", deadline.UnixMilli(), channel)
	if err := rc.HSet(t.Context(), k.waiters, owner, rec).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.RPush(t.Context(), k.queue, owner).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestDeadWaitersAreSkipped(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	// A waiter whose deadline passed is dead. A standalone server also
	// counts subscribers: a waiter whose Driver's channel has none is dead
	// before its deadline. Without that count (cluster and ring clients)
	// the deadline alone decides.
	for _, tc := range []struct {
		name     string
		d        *Driver
		channel  string
		deadline time.Duration
		skipped  bool
	}{
		{"standalone/unsubscribed", New(rc), "pzerotal_lock:grant:nobody", time.Hour, true},
		{"standalone/subscribed", New(rc), "", time.Hour, false}, // the channel of a live Driver, set below
		// A frozen host stays subscribed until TCP keepalive drops it,
		// but its waiters stop polling: the deadline still counts.
		{"standalone/subscribed/deadline-passed", New(rc), "", -time.Second, true},
		{"deadline/passed", New(rc), "", -time.Second, true},
		{"deadline/ahead", New(rc), "", time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer tc.d.Close()
			key, holder, dead := testKey(t, "dead"), newOwner(), newOwner()
			if ok, err := tc.d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
				t.Fatalf("Acquire = %v, %v", ok, err)
			}
			channel := tc.channel
			if strings.HasPrefix(tc.name, "standalone/subscribed") {
				live := New(rc)
				defer live.Close()
				// A waiter on another key makes live subscribe.
				other := testKey(t, "other")
				if ok, err := live.Acquire(ctx, other, newOwner(), time.Minute); err != nil || !ok {
					t.Fatalf("Acquire = %v, %v", ok, err)
				}
				startWait(t, live, other, newOwner(), time.Minute)
				waitListening(t, rc, live)
				channel = kindPublish + live.grants.channel
			}
			if strings.HasPrefix(tc.name, "deadline") {
				// A channel no server can count the subscribers of.
				channel = kindGlobal + "zerotal_lock:grant:uncounted"
			}
			queueRecord(t, rc, key, dead, channel, time.Now().Add(tc.deadline))
			if err := rc.SetRange(ctx, redisKeys(key).lock, 0, "q").Err(); err != nil {
				t.Fatal(err)
			}
			if ok, err := tc.d.Release(ctx, key, holder); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			h, held, err := tc.d.Inspect(ctx, key)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.skipped && held:
				t.Fatalf("the key went to a dead waiter: %+v", h)
			case !tc.skipped && (!held || h.Owner != dead):
				t.Fatalf("Inspect = %+v, %v; want the key handed to the live waiter %s", h, held, dead)
			}
		})
	}
}

// Environment of the waiter child process started by
// TestKilledWaiterDoesNotWedgeTheKey.
const (
	waitChildURLEnv = "ZEROTAL_REDIS_WAIT_CHILD_URL"
	waitChildKeyEnv = "ZEROTAL_REDIS_WAIT_CHILD_KEY"
)

// runWaitChild is the waiter child's life: it queues for the key and waits,
// until it is killed, its stdin closes or a minute passes. It never returns.
func runWaitChild() {
	d, err := Open(os.Getenv(waitChildURLEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "wait child:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Println("waiting")
	_, err = d.AcquireWait(ctx, os.Getenv(waitChildKeyEnv), newOwner(), time.Minute)
	fmt.Fprintln(os.Stderr, "wait child: AcquireWait returned", err)
	os.Exit(3)
}

func TestKilledWaiterDoesNotWedgeTheKey(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	d := New(rc, noPolls)
	defer d.Close()
	ctx := t.Context()
	key, holder := testKey(t, "killed"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), waitChildURLEnv+"="+s.url(), waitChildKeyEnv+"="+key)
	stdin, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	var reaped sync.Once
	reap := func() { reaped.Do(func() { _ = child.Wait() }) }
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = child.Process.Kill()
		reap()
	})
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "waiting\n" {
		t.Fatalf("child said %q, %v; want \"waiting\"", line, err)
	}
	// The child is queued, under its channel, before a live waiter.
	k := redisKeys(key)
	if !waitUntil(handOffBound, func() bool {
		rec, err := rc.HGetAll(ctx, k.waiters).Result()
		return err == nil && len(rec) == 1 && !strings.Contains(firstValue(rec), "\n\n")
	}) {
		t.Fatal("the child never queued under its notice channel")
	}
	result, _ := startWait(t, d, key, newOwner(), time.Minute)
	waitQueuedListening(t, rc, key, 2)

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reap()
	// The server drops a dead client's subscription when its socket
	// closes; the release then skips the dead waiter at once.
	if !waitUntil(handOffBound, func() bool {
		list, err := rc.ClientList(ctx).Result()
		return err == nil && strings.Count(list, "sub=1") == 1
	}) {
		t.Fatal("the killed child's subscription is still there")
	}
	released := time.Now()
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	r := awaitResult(t, result, handOffBound, "the holder released, with a killed waiter ahead")
	if r.err != nil {
		t.Fatalf("AcquireWait behind a killed waiter: %v", r.err)
	}
	if late := r.at.Sub(released); late > time.Second {
		t.Fatalf("the live waiter got the key %v after the release; want it at once, not after the dead one's TTL", late)
	}
}

// firstValue returns a value of m.
func firstValue(m map[string]string) string {
	for _, v := range m {
		return v
	}
	return ""
}

func TestOneSubscriptionPerDriver(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	d := s.open(t)
	ctx := t.Context()
	const keys = 5
	for i := range keys {
		key := testKey(t, fmt.Sprint("k", i))
		if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		for range 4 {
			startWait(t, d, key, newOwner(), time.Minute)
		}
		waitQueued(t, rc, key, 4)
	}
	waitListening(t, rc, d)
	list, err := rc.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "sub=1"); n != 1 {
		t.Fatalf("%d connections are subscribed for 20 waiters; want 1:\n%s", n, list)
	}
}

func TestUncontendedCallsPublishNothing(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	d := s.open(t)
	ctx := t.Context()
	key := testKey(t, "quiet")
	for range 10 {
		owner := newOwner()
		if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		token, err := d.AcquireWait(ctx, key, owner, time.Minute)
		if err != nil || token == 0 {
			t.Fatalf("AcquireWait of a free key = %d, %v", token, err)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
	}
	stats, err := rc.Info(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"cmdstat_publish:", "cmdstat_subscribe:"} {
		if strings.Contains(stats, cmd) {
			t.Errorf("uncontended acquires and releases ran %s:\n%s", strings.TrimSuffix(cmd, ":"), stats)
		}
	}
	if list, err := rc.ClientList(ctx).Result(); err != nil || strings.Contains(list, "sub=1") {
		t.Errorf("an uncontended driver opened a subscription (%v):\n%s", err, list)
	}
}

func TestNoticesResumeAfterServerRestart(t *testing.T) {
	s := startServer(t)
	d, err := Open(s.url(), noPolls)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "restart")
	if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, d, key, newOwner(), time.Minute)
	waitQueuedListening(t, rc, key, 1)
	// The restart loses the lock and the queue; the resubscription pokes
	// the waiter, whose poll finds the key free, an hour before its next
	// scheduled poll.
	s.restart(t)
	if r := awaitResult(t, result, handOffBound, "the server restarted"); r.err != nil {
		t.Fatalf("AcquireWait across a restart: %v", r.err)
	}
}

func TestContendedWorkersTakeTurns(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	key := testKey(t, "turns")
	const (
		workers = 4
		total   = 100
	)
	// Each worker asks again as soon as it releases. A lock that lets the
	// releaser win again starves the others; a queue serves them in turn.
	var inside, overlaps, taken atomic.Int32
	counts := make([]int, workers)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		d := New(rc, noPolls)
		defer d.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for taken.Load() < total {
				owner := newOwner()
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				_, err := d.AcquireWait(wctx, key, owner, time.Minute)
				cancel()
				if err != nil {
					errs <- err
					return
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				if taken.Add(1) <= total {
					counts[w]++
				}
				time.Sleep(time.Millisecond) // the critical section
				inside.Add(-1)
				if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
					errs <- fmt.Errorf("Release = %v, %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping critical sections", n)
	}
	// In strict turns each worker has total/workers; a late re-queue (a
	// descheduled worker) shifts a turn or two, a loaded machine a few more.
	// A lock that lets the releaser barge gives one worker most turns.
	for _, n := range counts {
		if n < total/workers-8 || n > total/workers+8 {
			t.Fatalf("acquisitions per worker = %v; want each within 8 of %d (taking turns)", counts, total/workers)
		}
	}
}

// TestAWaiterOnlyItsDeadlineVouchesForGetsTheKeyUntilThatDeadline covers the
// waiters whose liveness the server cannot check (one queued before its
// subscription was confirmed, or under an ACL that denies SUBSCRIBE, and
// every waiter of a cluster or ring client): a hand-off to one that has died
// must cost at most its liveness deadline, not a whole TTL.
func TestAWaiterOnlyItsDeadlineVouchesForGetsTheKeyUntilThatDeadline(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	for _, tc := range []struct{ name, channel string }{
		{"never subscribed", ""},
		{"subscribers not countable", kindGlobal + "zerotal_lock:grant:gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New(rc)
			defer d.Close()
			key, holder, dead := testKey(t, "unvouched"), newOwner(), newOwner()
			if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
				t.Fatalf("Acquire = %v, %v", ok, err)
			}
			const liveness = 500 * time.Millisecond
			queueRecord(t, rc, key, dead, tc.channel, time.Now().Add(liveness)) // its TTL is 60s
			if err := rc.SetRange(ctx, redisKeys(key).lock, 0, "q").Err(); err != nil {
				t.Fatal(err)
			}
			if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			mustHold(t, d, key, dead)
			pttl, err := rc.PTTL(ctx, redisKeys(key).lock).Result()
			if err != nil || pttl > liveness {
				t.Fatalf("the waiter that may be dead got the key for %v (%v); want at most its %v liveness", pttl, err, liveness)
			}
			start := time.Now()
			if !waitUntil(handOffBound, func() bool {
				ok, err := d.Acquire(ctx, key, newOwner(), time.Minute)
				return err == nil && ok
			}) {
				t.Fatalf("the key was still held %v after the dead waiter's deadline", handOffBound)
			}
			if took := time.Since(start); took > liveness+time.Second {
				t.Fatalf("the key came free %v after the hand-off", took)
			}
		})
	}
}

// TestALiveUnvouchedWaiterConfirmsItsGrant: a live waiter of a client whose
// server cannot count subscribers gets a provisional grant and its notice,
// and extends the lock to its whole TTL before AcquireWait returns.
func TestALiveUnvouchedWaiterConfirmsItsGrant(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	holder, waiter := s.open(t), New(rc, noPolls)
	defer waiter.Close()
	waiter.grants.kind = kindGlobal // as if the server could not count its subscribers
	ctx := t.Context()
	key, first, next := testKey(t, "confirm"), newOwner(), newOwner()
	if ok, err := holder.Acquire(ctx, key, first, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueuedListening(t, rc, key, 1)
	// Queued under the channel: its next attempt re-queues there.
	if !waitUntil(handOffBound, func() bool {
		rec, err := rc.HGet(ctx, redisKeys(key).waiters, next).Result()
		return err == nil && strings.Contains(rec, waiter.grants.channel)
	}) {
		t.Fatal("the waiter never queued under its channel")
	}
	if ok, err := holder.Release(ctx, key, first); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	r := awaitResult(t, result, handOffBound, "the holder released")
	if r.err != nil {
		t.Fatalf("AcquireWait = %v", r.err)
	}
	mustHold(t, waiter, key, next)
	if pttl, err := rc.PTTL(ctx, redisKeys(key).lock).Result(); err != nil || pttl < 30*time.Second {
		t.Fatalf("after AcquireWait returned, the lock lasts %v (%v); want its whole minute", pttl, err)
	}
}
