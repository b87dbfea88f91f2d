package postgres

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock/drivers/postgres/postgrestest"
)

func TestInspectRecordsTheHolder(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key, owner := testKey("inspect"), newOwner()
	if _, held, err := d.Inspect(ctx, key); err != nil || held {
		t.Fatalf("Inspect of a free key = %v, %v; want false, nil", held, err)
	}
	before := serverMicros(t, w.conn)
	token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	after := serverMicros(t, w.conn)
	h, held, err := d.Inspect(ctx, key)
	if err != nil || !held {
		t.Fatalf("Inspect = %v, %v", held, err)
	}
	host, _ := os.Hostname()
	if h.Owner != owner || h.Token != token || h.PID != os.Getpid() || h.Host != host {
		t.Fatalf("Inspect = %+v; want owner %s, token %d, pid %d, host %q", h, owner, token, os.Getpid(), host)
	}
	// Both times are the server's clock.
	acquired := uint64(h.AcquiredAt.UnixMicro())
	if acquired < before || acquired > after {
		t.Fatalf("AcquiredAt = %v (%dµs); want on the server's clock between %d and %d", h.AcquiredAt, acquired, before, after)
	}
	if got := h.ExpiresAt.Sub(h.AcquiredAt); got != time.Minute {
		t.Fatalf("ExpiresAt - AcquiredAt = %v; want the TTL, 1m", got)
	}
	if ok, err := d.Extend(ctx, key, owner, time.Hour); err != nil || !ok {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	h2, _, _ := d.Inspect(ctx, key)
	if !h2.AcquiredAt.Equal(h.AcquiredAt) || h2.ExpiresAt.Sub(h.AcquiredAt) < time.Hour {
		t.Fatalf("after Extend: %+v; want AcquiredAt unchanged and ExpiresAt an hour on", h2)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if _, held, err := d.Inspect(ctx, key); err != nil || held {
		t.Fatalf("Inspect of a released key = %v, %v; want false, nil", held, err)
	}
}

func TestExtendNeverTakesAFreeKey(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key, owner := testKey("extend"), newOwner()
	if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend of a key never taken = %v, %v; want false, nil", ok, err)
	}
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if _, err := w.conn.Exec(ctx, `UPDATE `+d.table.quoted()+` SET expires_at = clock_timestamp() WHERE key = $1`, key); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Extend(ctx, key, owner, time.Minute); err != nil || ok {
		t.Fatalf("Extend of an expired lock = %v, %v; want false, nil", ok, err)
	}
	if held, err := d.Exists(ctx, key); err != nil || held {
		t.Fatalf("Exists after a refused Extend = %v, %v; want false", held, err)
	}
}

func TestBadInputFailsBeforeTheServer(t *testing.T) {
	// Nothing listens on port 1: a call that reached for the server would
	// fail with a connection error instead of the one expected.
	d, err := Open("postgres://postgres@127.0.0.1:1/none?connect_timeout=1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := t.Context()
	for _, owner := range []string{"", "has space"} {
		if _, err := d.Acquire(ctx, "k", owner, time.Second); !errors.Is(err, errBadOwner) {
			t.Errorf("Acquire with owner %q: %v; want errBadOwner", owner, err)
		}
		if _, err := d.AcquireWait(ctx, "k", owner, time.Second); !errors.Is(err, errBadOwner) {
			t.Errorf("AcquireWait with owner %q: %v; want errBadOwner", owner, err)
		}
	}
	bad := New(nil)
	if _, err := bad.Acquire(ctx, "k", newOwner(), time.Second); !errors.Is(err, errNoPool) {
		t.Errorf("Acquire on New(nil): %v; want errNoPool", err)
	}
	_ = bad.Close()
}

func TestBadTableFailsEveryCall(t *testing.T) {
	pool, err := pgxpool.New(context.Background(), "postgres://postgres@127.0.0.1:1/none")
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d := New(pool, WithTable("Not-Valid"))
	defer d.Close()
	ctx := t.Context()
	checks := map[string]error{}
	_, checks["Acquire"] = d.Acquire(ctx, "k", newOwner(), time.Second)
	_, checks["Release"] = d.Release(ctx, "k", newOwner())
	_, checks["Extend"] = d.Extend(ctx, "k", newOwner(), time.Second)
	checks["ForceRelease"] = d.ForceRelease(ctx, "k")
	_, checks["Exists"] = d.Exists(ctx, "k")
	_, _, checks["Inspect"] = d.Inspect(ctx, "k")
	_, checks["AcquireWait"] = d.AcquireWait(ctx, "k", newOwner(), time.Second)
	for op, err := range checks {
		if !errors.Is(err, ErrBadTable) || !strings.Contains(err.Error(), `"Not-Valid"`) {
			t.Errorf("%s with a bad table: %v; want ErrBadTable naming it", op, err)
		}
	}
}

func TestClosedDriverRefusesCalls(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := t.Context()
	if _, err := d.Acquire(ctx, "k", newOwner(), time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("Acquire after Close: %v; want ErrClosed", err)
	}
	if _, err := d.AcquireWait(ctx, "k", newOwner(), time.Second); !errors.Is(err, ErrClosed) {
		t.Errorf("AcquireWait after Close: %v; want ErrClosed", err)
	}
	if _, err := d.Exists(ctx, "k"); !errors.Is(err, ErrClosed) {
		t.Errorf("Exists after Close: %v; want ErrClosed", err)
	}
}

func TestNewLeavesThePoolOpen(t *testing.T) {
	url := sharedURL(t)
	pool, err := pgxpool.New(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d := New(pool, WithTable(testTable(t, url)))
	key, owner := testKey("new"), newOwner()
	if ok, err := d.Acquire(t.Context(), key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pool.Ping(t.Context()); err != nil {
		t.Fatalf("the pool given to New was closed by the Driver's Close: %v", err)
	}
}

// TestConcurrentOpensCreateTheSchemaOnce starts many Drivers at once on a
// schema that does not exist yet, as processes starting together would:
// every first call must succeed (the migrations take turns on an advisory
// lock), and the result is one table.
func TestConcurrentOpensCreateTheSchemaOnce(t *testing.T) {
	url := sharedURL(t)
	table := testTable(t, url)
	const drivers = 8
	ds := make([]*Driver, drivers)
	for i := range ds {
		ds[i] = openDriver(t, url, table)
	}
	start := make(chan struct{})
	errs := make([]error, drivers)
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = d.Acquire(t.Context(), testKey("first"), newOwner(), time.Minute)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Driver %d's first call: %v", i, err)
		}
	}
	conn := connect(t, url)
	schema, _, _ := strings.Cut(table, ".")
	var tables, functions int
	err := conn.QueryRow(t.Context(), `SELECT
		(SELECT count(*) FROM pg_tables WHERE schemaname = $1),
		(SELECT count(*) FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1)`, schema).Scan(&tables, &functions)
	if err != nil {
		t.Fatal(err)
	}
	if tables != 2 || functions != len(schemaObjects)-1 {
		t.Fatalf("schema %s has %d tables and %d functions; want 2 and %d", schema, tables, functions, len(schemaObjects)-1)
	}
}

func TestDroppedTableIsCreatedAgain(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	if ok, err := d.Acquire(ctx, testKey("a"), newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	schema, _, _ := strings.Cut(w.table, ".")
	if _, err := w.conn.Exec(ctx, "DROP SCHEMA "+quoteIdent(schema)+" CASCADE"); err != nil {
		t.Fatal(err)
	}
	// The call that finds the table gone fails; the next one recreates it.
	if _, err := d.Acquire(ctx, testKey("b"), newOwner(), time.Minute); err == nil {
		t.Fatal("Acquire on a dropped table succeeded")
	}
	if ok, err := d.Acquire(ctx, testKey("c"), newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire after the table was dropped = %v, %v; want the schema recreated", ok, err)
	}
}

// TestPrivileges runs every operation, a queued wait and a hand-off
// included, as a role that may only use the objects, on a private server
// (roles belong to the whole cluster); and checks what a role that cannot
// create the table is told.
func TestPrivileges(t *testing.T) {
	s := postgrestest.Start(t)
	admin := connect(t, s.URL())
	ctx := t.Context()
	// The objects, made once by a role that may create them.
	owner := openDriver(t, s.URL(), DefaultTable)
	if _, err := owner.Exists(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	for _, sql := range []string{
		`CREATE ROLE locker LOGIN`,
		`CREATE ROLE nobody LOGIN`,
		`GRANT USAGE ON SCHEMA zerotal_lock TO locker`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA zerotal_lock TO locker`,
		`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA zerotal_lock TO locker`,
		`REVOKE CREATE ON SCHEMA public FROM PUBLIC`,
	} {
		if _, err := admin.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	url := strings.Replace(s.URL(), "postgres@", "locker@", 1)
	a, b := openDriver(t, url, DefaultTable), openDriver(t, url, DefaultTable, noPolls)
	key, holder, waiter := testKey("grants"), newOwner(), newOwner()
	if _, ok, err := a.AcquireFenced(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("AcquireFenced as locker = %v, %v", ok, err)
	}
	result, _ := startWait(t, b, key, waiter, time.Minute)
	waitQueued(t, admin, a, key, 1)
	if ok, err := a.Extend(ctx, key, holder, time.Minute); err != nil || !ok {
		t.Fatalf("Extend as locker = %v, %v", ok, err)
	}
	if _, held, err := a.Inspect(ctx, key); err != nil || !held {
		t.Fatalf("Inspect as locker = %v, %v", held, err)
	}
	if ok, err := a.Release(ctx, key, holder); err != nil || !ok {
		t.Fatalf("Release as locker = %v, %v", ok, err)
	}
	if r := awaitResult(t, result, handOffBound, "the holder released"); r.err != nil {
		t.Fatalf("AcquireWait as locker: %v", r.err)
	}
	if err := a.ForceRelease(ctx, key); err != nil {
		t.Fatalf("ForceRelease as locker: %v", err)
	}

	// A role that may not create the schema learns what it lacks.
	nobody := openDriver(t, strings.Replace(s.URL(), "postgres@", "nobody@", 1), "other.locks")
	_, err := nobody.Exists(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "needs CREATE") {
		t.Fatalf("Exists as a role without CREATE: %v; want an error saying which privilege is missing", err)
	}
}
