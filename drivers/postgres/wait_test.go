package postgres

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
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
	ctx, cancel := context.WithCancel(context.Background())
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

// queue returns the owners queued for key in d's table, first first, and
// how many of them have a listening session recorded.
func queue(t *testing.T, conn *pgx.Conn, d *Driver, key string) (owners []string, listening int) {
	t.Helper()
	rows, err := conn.Query(t.Context(), `SELECT owner, listener_pid <> 0 FROM `+d.table.object("waiters")+` WHERE key = $1 ORDER BY seq`, key)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var owner string
		var l bool
		if err := rows.Scan(&owner, &l); err != nil {
			t.Fatal(err)
		}
		owners = append(owners, owner)
		if l {
			listening++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return owners, listening
}

// waitQueued waits until key's queue holds n waiters, all of them queued
// under a listening session (so that hand-offs notify them).
func waitQueued(t *testing.T, conn *pgx.Conn, d *Driver, key string, n int) {
	t.Helper()
	var owners []string
	var listening int
	if !waitUntil(handOffBound, func() bool {
		owners, listening = queue(t, conn, d, key)
		return len(owners) == n && listening == n
	}) {
		t.Fatalf("queue of %s holds %d waiters (%d listening) after %v; want %d, all listening", key, len(owners), listening, handOffBound, n)
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

// waitSetup is a shared-server table with a control connection.
type waitSetup struct {
	url, table string
	conn       *pgx.Conn
}

func newWaitSetup(t *testing.T) waitSetup {
	url := sharedURL(t)
	return waitSetup{url: url, table: testTable(t, url), conn: connect(t, url)}
}

func (w waitSetup) open(t *testing.T, opts ...Option) *Driver {
	return openDriver(t, w.url, w.table, opts...)
}

func TestHandOffOnReleaseByNotice(t *testing.T) {
	w := newWaitSetup(t)
	holder, waiter := w.open(t), w.open(t, noPolls)
	ctx := t.Context()
	key, first, next := testKey("handoff"), newOwner(), newOwner()

	prev, ok, err := holder.AcquireFenced(ctx, key, first, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueued(t, w.conn, waiter, key, 1)
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
	if owners, _ := queue(t, w.conn, holder, key); len(owners) != 0 {
		t.Fatalf("%d waiters remain queued after the last was served; want none", len(owners))
	}
	var queued bool
	if err := w.conn.QueryRow(ctx, `SELECT queued FROM `+holder.table.quoted()+` WHERE key = $1`, key).Scan(&queued); err != nil || queued {
		t.Fatalf("the lock row's queued flag = %v, %v after the queue emptied; want false", queued, err)
	}
}

func TestReleaserQueuesBehindWaiters(t *testing.T) {
	w := newWaitSetup(t)
	a, b := w.open(t, noPolls), w.open(t, noPolls)
	ctx := t.Context()
	key, holder, waiting := testKey("barging"), newOwner(), newOwner()

	if ok, err := a.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, b, key, waiting, time.Minute)
	waitQueued(t, w.conn, b, key, 1)
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
	waitQueued(t, w.conn, a, key, 1)
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
	w := newWaitSetup(t)
	d, waiter := w.open(t), w.open(t, noPolls)
	ctx := t.Context()
	key, holder, next := testKey("expired"), newOwner(), newOwner()

	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueued(t, w.conn, waiter, key, 1)
	// The lock expires as by its TTL: nothing runs, nobody is told.
	if _, err := w.conn.Exec(ctx, `UPDATE `+d.table.quoted()+` SET expires_at = clock_timestamp() WHERE key = $1`, key); err != nil {
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
	w := newWaitSetup(t)
	d, waiter := w.open(t), w.open(t, noPolls)
	const ttl = 300 * time.Millisecond
	key, holder, next := testKey("ttl"), newOwner(), newOwner()

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
	// holder's expiry, scheduled from the remaining TTL its attempt
	// returned, can end this wait in time.
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
	w := newWaitSetup(t)
	drivers := []*Driver{w.open(t, noPolls), w.open(t, noPolls), w.open(t, noPolls)}
	ctx := t.Context()
	key, holder := testKey("fifo"), newOwner()
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
		waitQueued(t, w.conn, drivers[0], key, i+1)
	}
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
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key, holder := testKey("leave"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, cancel := startWait(t, d, key, newOwner(), time.Minute)
	waitQueued(t, w.conn, d, key, 1)
	cancel()
	if r := awaitResult(t, result, handOffBound, "its ctx was cancelled"); r.err == nil {
		t.Fatal("AcquireWait with a cancelled ctx returned nil")
	}
	// It leaves in the background, so that its caller does not wait.
	var owners []string
	if !waitUntil(handOffBound, func() bool { owners, _ = queue(t, w.conn, d, key); return len(owners) == 0 }) {
		t.Fatalf("%d waiters remain %v after the only waiter left; want none", len(owners), handOffBound)
	}
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if held, err := d.Exists(ctx, key); err != nil || held {
		t.Fatalf("Exists after Release = %v, %v; want false", held, err)
	}
}

func TestLeaveAfterHandOffPassesTheKeyOn(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key, holder := testKey("gone"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	// Two waiters queued by single attempts, with no goroutine waiting:
	// the first is handed the key but never learns it.
	gone, next := newOwner(), newOwner()
	for _, owner := range []string{gone, next} {
		if token, _, _, _, err := d.waitAttempt(ctx, key, owner, time.Minute, identity{}); err != nil || token != 0 {
			t.Fatalf("waitAttempt = %d, %v; want queued", token, err)
		}
	}
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	mustHold(t, d, key, gone)
	// Its wait ends (ctx, Close): leaving gives the key to the next.
	if err := d.leaveOnce(key, gone); err != nil {
		t.Fatal(err)
	}
	mustHold(t, d, key, next)
	if token, _, _, _, err := d.waitAttempt(ctx, key, next, time.Minute, identity{}); err != nil || token == 0 {
		t.Fatalf("the next waiter's poll = %d, %v; want its token", token, err)
	}
}

// queueEntry puts owner in key's queue directly, as a waiter whose last
// poll set deadline and whose Driver listens on session pid (started at
// start; 0 for none).
func queueEntry(t *testing.T, conn *pgx.Conn, d *Driver, key, owner string, deadline time.Duration, pid int32, start any) {
	t.Helper()
	_, err := conn.Exec(t.Context(), `INSERT INTO `+d.table.object("waiters")+`
		(key, owner, ttl_us, deadline, channel, listener_pid, listener_start, pid, host)
		VALUES ($1, $2, 60000000, clock_timestamp() + $3 * interval '1 microsecond', 'zerotal_lock_nobody', $4, $5, 1, 'host')`,
		key, owner, deadline.Microseconds(), pid, start)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `UPDATE `+d.table.quoted()+` SET queued = true WHERE key = $1`, key); err != nil {
		t.Fatal(err)
	}
}

func TestDeadWaitersAreSkipped(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	// A backend that runs: the control connection's.
	var livePID int32
	var liveStart time.Time
	if err := w.conn.QueryRow(ctx, `SELECT pid, backend_start FROM pg_stat_get_activity(pg_backend_pid())`).Scan(&livePID, &liveStart); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		deadline time.Duration
		pid      int32
		start    any
		skipped  bool
	}{
		{"deadline ahead, no session", time.Hour, 0, nil, false},
		{"deadline passed, no session", -time.Second, 0, nil, true},
		{"deadline ahead, session running", time.Hour, livePID, liveStart, false},
		// A frozen host's sessions stay open, but its waiters stop
		// polling: the deadline still counts.
		{"deadline passed, session running", -time.Second, livePID, liveStart, true},
		// A killed process's session ends with its connection: skipped
		// before its deadline.
		{"deadline ahead, session gone", time.Hour, 1 << 30, liveStart, true},
		// The pid now belongs to a newer session: the old one is gone.
		{"deadline ahead, pid reused", time.Hour, livePID, liveStart.Add(-time.Hour), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, holder, waiter := testKey("dead"), newOwner(), newOwner()
			if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
				t.Fatalf("Acquire = %v, %v", ok, err)
			}
			queueEntry(t, w.conn, d, key, waiter, tc.deadline, tc.pid, tc.start)
			if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
				t.Fatalf("Release = %v, %v", ok, err)
			}
			h, held, err := d.Inspect(ctx, key)
			switch {
			case err != nil:
				t.Fatal(err)
			case tc.skipped && held:
				t.Fatalf("the key went to a dead waiter: %+v", h)
			case !tc.skipped && (!held || h.Owner != waiter):
				t.Fatalf("Inspect = %+v, %v; want the key handed to the live waiter %s", h, held, waiter)
			}
			if owners, _ := queue(t, w.conn, d, key); len(owners) != 0 {
				t.Fatalf("the hand-off left %d entries queued; want none", len(owners))
			}
		})
	}
}

// TestAWaiterOnlyItsDeadlineVouchesForHoldsTheKeyUntilThatDeadline hands
// the key to a waiter that queued without a listening session, so that only
// its liveness deadline says it is alive: it gets the key until that
// deadline, not for its whole TTL, so that a waiter that died just after
// its last poll does not keep the key from everyone for a TTL; its next
// poll makes the lock last its TTL.
func TestAWaiterOnlyItsDeadlineVouchesForHoldsTheKeyUntilThatDeadline(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key, holder, waiter := testKey("provisional"), newOwner(), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	const deadline = 3 * time.Second
	queueEntry(t, w.conn, d, key, waiter, deadline, 0, nil) // TTL 60s
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	h, held, err := d.Inspect(ctx, key)
	if err != nil || !held || h.Owner != waiter {
		t.Fatalf("Inspect = %+v, %v, %v; want the key handed to the waiter", h, held, err)
	}
	if lease := h.ExpiresAt.Sub(h.AcquiredAt); lease <= 0 || lease > deadline {
		t.Fatalf("the provisional grant lasts %v; want at most the waiter's deadline, %v away", lease, deadline)
	}
	token, _, _, _, err := d.waitAttempt(ctx, key, waiter, time.Minute, identity{})
	if err != nil || token != h.Token {
		t.Fatalf("the waiter's poll = %d, %v; want its token %d", token, err, h.Token)
	}
	h2, _, _ := d.Inspect(ctx, key)
	if lease := h2.ExpiresAt.Sub(h.AcquiredAt); lease < 50*time.Second {
		t.Fatalf("after the waiter's poll the lock ends %v after the hand-off; want its TTL, 1m, from the poll", lease)
	}
}

// Environment of the waiter child process started by
// TestKilledWaiterDoesNotWedgeTheKey.
const (
	waitChildEnv      = "ZEROTAL_POSTGRES_WAIT_CHILD"
	waitChildURLEnv   = "ZEROTAL_POSTGRES_WAIT_CHILD_URL"
	waitChildTableEnv = "ZEROTAL_POSTGRES_WAIT_CHILD_TABLE"
	waitChildKeyEnv   = "ZEROTAL_POSTGRES_WAIT_CHILD_KEY"
)

// runWaitChild is the waiter child's life: it queues for the key and waits,
// until it is killed, its stdin closes or a minute passes. It never returns.
func runWaitChild() {
	d, err := Open(os.Getenv(waitChildURLEnv), WithTable(os.Getenv(waitChildTableEnv)), noPolls)
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
	w := newWaitSetup(t)
	d := w.open(t, noPolls)
	ctx := t.Context()
	key, holder := testKey("killed"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}

	child := exec.Command(os.Args[0], "-test.run=^$")
	child.Env = append(os.Environ(), waitChildEnv+"=1", waitChildURLEnv+"="+w.url, waitChildTableEnv+"="+w.table, waitChildKeyEnv+"="+key)
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
	// The child is queued, under its listening session, before a live
	// waiter; its deadline is hours away (it polls hourly).
	waitQueued(t, w.conn, d, key, 1)
	result, _ := startWait(t, d, key, newOwner(), time.Minute)
	waitQueued(t, w.conn, d, key, 2)

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reap()
	// The server ends a dead client's sessions when its sockets close;
	// the release then skips the dead waiter at once.
	var sessions int
	if !waitUntil(handOffBound, func() bool {
		err := w.conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid =
			(SELECT listener_pid FROM `+d.table.object("waiters")+` WHERE key = $1 ORDER BY seq LIMIT 1)`, key).Scan(&sessions)
		return err == nil && sessions == 0
	}) {
		t.Fatalf("the killed child's listening session is still there (%d)", sessions)
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
		t.Fatalf("the live waiter got the key %v after the release; want it at once, not after the dead one's deadline", late)
	}
}

func TestOneListeningSessionPerDriver(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	const keys = 5
	for i := range keys {
		key := testKey(fmt.Sprint("k", i))
		if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		for range 4 {
			startWait(t, d, key, newOwner(), time.Minute)
		}
		waitQueued(t, w.conn, d, key, 4)
	}
	var sessions, running int
	err := w.conn.QueryRow(ctx, `SELECT count(DISTINCT listener_pid), count(DISTINCT a.pid) FROM `+d.table.object("waiters")+` x
		LEFT JOIN pg_stat_activity a ON a.pid = x.listener_pid`).Scan(&sessions, &running)
	if err != nil {
		t.Fatal(err)
	}
	if sessions != 1 || running != 1 {
		t.Fatalf("20 waiters are queued under %d listening sessions (%d running); want 1", sessions, running)
	}
}

func TestUncontendedCallsListenToNothing(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key := testKey("quiet")
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
	d.notices.mu.Lock()
	started := d.notices.ready != nil
	d.notices.mu.Unlock()
	if started {
		t.Fatal("an uncontended Driver opened its listening session")
	}
}

func TestContendedWorkersTakeTurns(t *testing.T) {
	w := newWaitSetup(t)
	ctx := t.Context()
	key := testKey("turns")
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
	for i := range workers {
		d := w.open(t, noPolls)
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
					counts[i]++
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

func TestCloseWakesWaitersAndPassesTheirKeysOn(t *testing.T) {
	w := newWaitSetup(t)
	d, closing := w.open(t), w.open(t, noPolls)
	ctx := t.Context()
	key, holder := testKey("close"), newOwner()
	if ok, err := d.Acquire(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, closing, key, newOwner(), time.Minute)
	waitQueued(t, w.conn, d, key, 1)
	// A waiter of another Driver queues behind; the closing Driver's
	// entry must not keep the key from it.
	next := newOwner()
	later, _ := startWait(t, d, key, next, time.Minute)
	waitQueued(t, w.conn, d, key, 2)
	if err := closing.Close(); err != nil {
		t.Fatal(err)
	}
	if r := awaitResult(t, result, handOffBound, "its Driver closed"); r.err == nil {
		t.Fatal("AcquireWait on a closed Driver returned nil")
	}
	if owners, _ := queue(t, w.conn, d, key); len(owners) != 1 || owners[0] != next {
		t.Fatalf("queue after Close = %v; want only the other Driver's waiter", owners)
	}
	if ok, err := d.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if r := awaitResult(t, later, handOffBound, "the holder released"); r.err != nil {
		t.Fatalf("the other Driver's waiter: %v", r.err)
	}
	mustHold(t, d, key, next)
}
