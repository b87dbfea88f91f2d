package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// holdWriteLock takes the database's write lock from a connection of its own
// and returns the function that commits and lets it go.
func holdWriteLock(t *testing.T, path string) (unlock func()) {
	t.Helper()
	ctx := testContext(t)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	unlock = func() {
		if done {
			return
		}
		done = true
		if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
			t.Error(err)
		}
		_ = conn.Close()
		_ = db.Close()
	}
	t.Cleanup(unlock)
	return unlock
}

func TestBusyDatabaseEndsWithContextError(t *testing.T) {
	d, path := openFile(t)
	holdWriteLock(t, path)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.Acquire(ctx, "k", newOwner(t), time.Minute)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire on a locked database: %v; want context.DeadlineExceeded", err)
	}
	if isBusy(err) {
		t.Fatalf("busy error reached the caller: %v", err)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("Acquire gave up after %v, before its context ended", waited)
	}
}

func TestBusyDatabaseIsRetriedUntilFree(t *testing.T) {
	d, path := openFile(t)
	unlock := holdWriteLock(t, path)
	const held = 300 * time.Millisecond // several busy_timeout rounds
	timer := time.AfterFunc(held, unlock)
	defer timer.Stop()
	start := time.Now()
	owner := newOwner(t)
	ok, err := d.Acquire(testContext(t), "k", owner, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire while another connection held the write lock = %v, %v; want success once it let go", ok, err)
	}
	if waited := time.Since(start); waited < held-50*time.Millisecond {
		t.Fatalf("Acquire returned after %v, before the write lock was released", waited)
	}
	if ok, err := d.Release(testContext(t), "k", owner); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
}

// A ctx without a deadline allows every retry: the busy error must not reach
// the caller however long the database stays locked; only the ctx's end
// stops the wait.
func TestBusyDatabaseWithoutDeadlineWaitsForCancel(t *testing.T) {
	d, path := openFile(t)
	holdWriteLock(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	const held = 400 * time.Millisecond
	timer := time.AfterFunc(held, cancel)
	defer timer.Stop()
	start := time.Now()
	_, err := d.Acquire(ctx, "k", newOwner(t), time.Minute)
	if !errors.Is(err, context.Canceled) || isBusy(err) {
		t.Fatalf("Acquire on a locked database = %v; want context.Canceled and no busy error", err)
	}
	if waited := time.Since(start); waited < held-50*time.Millisecond {
		t.Fatalf("Acquire gave up after %v, before its context was cancelled", waited)
	}
}

// context.Background never ends, so a statement under it waits for the
// database to be free and then succeeds.
func TestBusyDatabaseUnderBackgroundIsRetriedUntilFree(t *testing.T) {
	d, path := openFile(t)
	unlock := holdWriteLock(t, path)
	timer := time.AfterFunc(300*time.Millisecond, unlock)
	defer timer.Stop()
	owner := newOwner(t)
	if ok, err := d.Acquire(context.Background(), "k", owner, time.Minute); !ok || err != nil {
		t.Fatalf("Acquire under context.Background = %v, %v; want success once the write lock is gone", ok, err)
	}
	if ok, err := d.Release(context.Background(), "k", owner); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
}

func TestIsBusy(t *testing.T) {
	d, path := openFile(t)
	holdWriteLock(t, path)
	// Bypass the retry loop: one raw statement against the locked file.
	_, err := d.releaseStmt.Exec("k", "o")
	if !isBusy(err) {
		t.Fatalf("isBusy(%v) = false; want true", err)
	}
	if isBusy(errors.New("database is locked")) || isBusy(nil) {
		t.Fatal("isBusy accepted an error that is not SQLite's")
	}
}
