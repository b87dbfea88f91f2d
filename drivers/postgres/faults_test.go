package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers/postgres/postgrestest"
)

// The fault tests run on private servers (postgrestest): they kill
// sessions, restart, crash and freeze the server.

// faultBound is how long a driver may take to recover from a fault:
// reconnecting, the listener's backoff (at most 2s), a poll.
const faultBound = 15 * time.Second

// appDriver opens a Driver on s whose sessions carry application_name app,
// so that a test can terminate exactly its sessions.
func appDriver(t *testing.T, s *postgrestest.Server, app string, opts ...Option) *Driver {
	t.Helper()
	return openDriver(t, s.URL()+"&application_name="+app, DefaultTable, opts...)
}

// terminate ends every session of application app with
// pg_terminate_backend, as an administrator or a pooler would, and returns
// how many it ended.
func terminate(t *testing.T, admin *pgx.Conn, app string) int {
	t.Helper()
	var n int
	err := admin.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, app).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// eventually calls op until it succeeds or faultBound passes. Every failed
// attempt must be an error, never a quiet false: ok false with a nil error
// would be an outage reported as contention.
func eventually(t *testing.T, what string, op func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(faultBound)
	var lastErr error
	for time.Now().Before(deadline) {
		ok, err := op()
		switch {
		case err == nil && ok:
			return
		case err == nil:
			t.Fatalf("%s returned false without an error after a fault; want true, or an error while the fault lasts", what)
		}
		lastErr = err
		time.Sleep(20 * time.Millisecond) // a failing server is not spun on
	}
	t.Fatalf("%s still failing %v after the fault: %v", what, faultBound, lastErr)
}

// waitAgainIfFailed returns result if that wait is still going; if it ended
// with an error (a backend failure ends a wait, and the engine waits again),
// it starts another wait as a new owner, as the engine would, and returns
// its result. A token while the key is still held fails t.
func waitAgainIfFailed(t *testing.T, result <-chan waitResult, d *Driver, key string, owner *string) <-chan waitResult {
	t.Helper()
	select {
	case r := <-result:
		if r.err == nil {
			t.Fatalf("AcquireWait returned token %d while the key was still held", r.token)
		}
		t.Logf("the wait ended with %v; waiting again", r.err)
		*owner = newOwner()
		result, _ = startWait(t, d, key, *owner, time.Minute)
	default:
	}
	return result
}

// requeued waits until the current waiter's queue entry records its
// Driver's current listening session, so that a hand-off notifies it,
// starting a new wait whenever the wait fails meanwhile (its poll may hit a
// pooled session that the fault killed).
func requeued(t *testing.T, admin *pgx.Conn, result <-chan waitResult, d *Driver, key string, owner *string) <-chan waitResult {
	t.Helper()
	if !waitUntil(faultBound, func() bool {
		result = waitAgainIfFailed(t, result, d, key, owner)
		var pid int32
		err := admin.QueryRow(t.Context(), `SELECT listener_pid FROM `+d.table.object("waiters")+` WHERE key = $1 AND owner = $2`, key, *owner).Scan(&pid)
		return err == nil && pid != 0 && pid == d.notices.identity().pid
	}) {
		t.Fatal("the waiter's queue entry never recorded the new listening session")
	}
	return result
}

func TestTerminatedSessionsWhileHolding(t *testing.T) {
	s := postgrestest.Start(t)
	admin := connect(t, s.URL())
	holder, other := appDriver(t, s, "holder"), appDriver(t, s, "other")
	ctx := t.Context()
	key, owner := testKey("terminated"), newOwner()
	token, ok, err := holder.AcquireFenced(ctx, key, owner, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	if n := terminate(t, admin, "holder"); n == 0 {
		t.Fatal("the holder's Driver had no session to terminate")
	}
	// The lock is a committed row: losing sessions does not free it.
	if ok, err := other.Acquire(ctx, key, newOwner(), time.Minute); err != nil || ok {
		t.Fatalf("Acquire by another Driver after the holder's sessions were killed = %v, %v; want false, nil", ok, err)
	}
	eventually(t, "Extend by the holder", func() (bool, error) { return holder.Extend(ctx, key, owner, time.Minute) })
	h, held, err := other.Inspect(ctx, key)
	if err != nil || !held || h.Owner != owner || h.Token != token {
		t.Fatalf("Inspect = %+v, %v, %v; want the holder, token %d", h, held, err, token)
	}
	eventually(t, "Release by the holder", func() (bool, error) { return holder.Release(ctx, key, owner) })
}

func TestTerminatedSessionsWhileWaiting(t *testing.T) {
	s := postgrestest.Start(t)
	admin := connect(t, s.URL())
	holder, waiter := appDriver(t, s, "holder"), appDriver(t, s, "waiter", noPolls)
	ctx := t.Context()
	key, owner, next := testKey("terminated-wait"), newOwner(), newOwner()
	if ok, err := holder.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueued(t, admin, waiter, key, 1)
	// The waiter's pool sessions and its listening session go. The
	// listener reconnects and pokes the waiter, whose poll records the
	// new session.
	before := waiter.notices.identity()
	if n := terminate(t, admin, "waiter"); n == 0 {
		t.Fatal("the waiter's Driver had no session to terminate")
	}
	if !waitUntil(faultBound, func() bool {
		id := waiter.notices.identity()
		return id.pid != 0 && id.pid != before.pid
	}) {
		t.Fatal("the listener did not reconnect")
	}
	// Until its poll succeeds the waiter may have returned an error (its
	// pooled session was killed under its poll), which is how a backend
	// failure ends a wait; the engine then waits again.
	result = requeued(t, admin, result, waiter, key, &next)
	if ok, err := holder.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// An hour between polls: only the notice on the new session can
	// deliver this in time.
	if r := awaitResult(t, result, handOffBound, "the holder released"); r.err != nil {
		t.Fatalf("AcquireWait after its sessions were killed: %v", r.err)
	}
	mustHold(t, holder, key, next)
}

// TestRestartKeepsHeldLocksAndTokens restarts the server (a clean stop, and
// a crash: SIGKILL of every process) while a lock is held. The lock table is
// an ordinary logged table and every acquisition is committed with
// synchronous_commit on, so the lock survives, its holder can go on
// refreshing it, and tokens issued after the restart exceed those before.
func TestRestartKeepsHeldLocksAndTokens(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart func(t *testing.T, s *postgrestest.Server)
	}{
		{"clean", func(t *testing.T, s *postgrestest.Server) { s.Restart(t) }},
		{"crash", func(t *testing.T, s *postgrestest.Server) { s.Kill(); s.Start(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := postgrestest.Start(t)
			holder, other := appDriver(t, s, "holder"), appDriver(t, s, "other")
			ctx := t.Context()
			key, owner := testKey("restart"), newOwner()
			before, ok, err := holder.AcquireFenced(ctx, key, owner, time.Minute)
			if err != nil || !ok {
				t.Fatalf("AcquireFenced = %v, %v", ok, err)
			}
			tc.restart(t, s)
			// Every call is an error (the pool's sessions died with the
			// server) or the truth: the key is still held.
			eventually(t, "Exists after the restart", func() (bool, error) { return other.Exists(ctx, key) })
			if ok, err := other.Acquire(ctx, key, newOwner(), time.Minute); err != nil || ok {
				t.Fatalf("Acquire by another after the restart = %v, %v; want false: the lock survived", ok, err)
			}
			eventually(t, "Extend by the holder", func() (bool, error) { return holder.Extend(ctx, key, owner, time.Minute) })
			eventually(t, "Release by the holder", func() (bool, error) { return holder.Release(ctx, key, owner) })
			after, ok, err := other.AcquireFenced(ctx, key, newOwner(), time.Minute)
			if err != nil || !ok || after <= before {
				t.Fatalf("AcquireFenced after the restart = %d, %v, %v; want a token above %d", after, ok, err, before)
			}
		})
	}
}

func TestRestartWhileWaiting(t *testing.T) {
	s := postgrestest.Start(t)
	admin := connect(t, s.URL())
	holder, waiter := appDriver(t, s, "holder"), appDriver(t, s, "waiter", noPolls)
	ctx := t.Context()
	key, owner, next := testKey("restart-wait"), newOwner(), newOwner()
	if ok, err := holder.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	result, _ := startWait(t, waiter, key, next, time.Minute)
	waitQueued(t, admin, waiter, key, 1)
	before := waiter.notices.identity()
	s.Restart(t)
	admin = connect(t, s.URL())
	if !waitUntil(faultBound, func() bool {
		id := waiter.notices.identity()
		return id.pid != 0 && id.pid != before.pid
	}) {
		t.Fatal("the listener did not reconnect after the restart")
	}
	// The queue is a table too: the waiter's entry survived, and the
	// poke after the reconnect records the new session in it. A poll that
	// hit the dead pool instead ends the wait with an error, and the
	// engine would wait again: so does this test.
	result = requeued(t, admin, result, waiter, key, &next)
	eventually(t, "Release by the holder", func() (bool, error) { return holder.Release(ctx, key, owner) })
	if r := awaitResult(t, result, handOffBound, "the holder released after the restart"); r.err != nil {
		t.Fatalf("AcquireWait across a restart: %v", r.err)
	}
	mustHold(t, holder, key, next)
}

// TestFrozenServerEndsCallsWithTheirContext freezes the server (SIGSTOP of
// every process: connections stay open, nothing answers) and checks that
// every call returns at its context's deadline with the context's error
// (AcquireWait with an outage error instead), including a first call, whose
// schema check is the first statement.
func TestFrozenServerEndsCallsWithTheirContext(t *testing.T) {
	s := postgrestest.Start(t)
	d := appDriver(t, s, "frozen")
	fresh := appDriver(t, s, "fresh") // no call yet: its first creates nothing
	ctx := t.Context()
	key, owner := testKey("frozen"), newOwner()
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	s.Pause()
	defer s.Resume()
	const deadline = 300 * time.Millisecond
	for name, call := range map[string]func(ctx context.Context) error{
		"Acquire":      func(ctx context.Context) error { _, err := d.Acquire(ctx, key, newOwner(), time.Minute); return err },
		"Release":      func(ctx context.Context) error { _, err := d.Release(ctx, key, owner); return err },
		"Extend":       func(ctx context.Context) error { _, err := d.Extend(ctx, key, owner, time.Minute); return err },
		"ForceRelease": func(ctx context.Context) error { return d.ForceRelease(ctx, key) },
		"Exists":       func(ctx context.Context) error { _, err := d.Exists(ctx, key); return err },
		"Inspect":      func(ctx context.Context) error { _, _, err := d.Inspect(ctx, key); return err },
		"AcquireWait": func(ctx context.Context) error {
			_, err := d.AcquireWait(ctx, key, newOwner(), time.Minute)
			return err
		},
		"first call": func(ctx context.Context) error { _, err := fresh.Exists(ctx, key); return err },
	} {
		cctx, cancel := context.WithTimeout(ctx, deadline)
		start := time.Now()
		err := call(cctx)
		took := time.Since(start)
		cancel()
		switch {
		case name == "AcquireWait":
			// A wait the server never answered is an outage, not a
			// wait that ran out: its error says so and does not wrap
			// the context's, so that the engine reports the backend.
			if err == nil || errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer from the server") {
				t.Errorf("AcquireWait on a frozen server: %v; want an error saying the server did not answer", err)
			}
		case !errors.Is(err, context.DeadlineExceeded):
			t.Errorf("%s on a frozen server: %v; want context.DeadlineExceeded", name, err)
		}
		if took > deadline+2*time.Second {
			t.Errorf("%s on a frozen server returned %v after its %v deadline", name, took-deadline, deadline)
		}
	}
	s.Resume()
	eventually(t, "Exists once the server thaws", func() (bool, error) { return d.Exists(ctx, key) })
}
