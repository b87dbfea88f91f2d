package sqlite

import (
	"context"
	"testing"
	"time"

	"github.com/zerotal/lock/driver/process"
)

func TestAcquireLeavesNoNotedTokens(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		ctx := testContext(t)
		a, b := newOwner(t), newOwner(t)
		// A new row, a refresh, a refusal, then (below) a takeover and a
		// cancelled call: every path through AcquireFenced.
		mustAcquire(t, d, "k", a, time.Minute)
		mustAcquire(t, d, "k", a, time.Minute)
		if ok, err := d.Acquire(ctx, "k", b, time.Minute); ok || err != nil {
			t.Fatalf("Acquire of a held key = %v, %v", ok, err)
		}
		if _, err := d.Release(ctx, "k", a); err != nil {
			t.Fatal(err)
		}
		mustAcquire(t, d, "k", b, time.Minute)
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := d.Acquire(cancelled, "k2", a, time.Minute); err == nil {
			t.Fatal("Acquire with a cancelled context succeeded")
		}
		left := 0
		notedTokens.Range(func(any, any) bool { left++; return true })
		if left != 0 {
			t.Fatalf("%d noted tokens left behind", left)
		}
	})
}

func TestAcquireSQLQuotesProcessIdentity(t *testing.T) {
	d := openPath(t, MemoryPath)
	odd := process.Identity{PID: 42, Start: 7, Scope: "boot'id/pid:[1]", Host: "o'neil's host"}
	stmt, err := d.db.Prepare(acquireSQL(odd))
	if err != nil {
		t.Fatalf("acquire statement for %+v does not compile: %v", odd, err)
	}
	defer stmt.Close()
	now := time.Now().UnixNano()
	if _, err := stmt.Exec("k", newOwner(t), now, now+int64(time.Minute), nil, 1); err != nil {
		t.Fatal(err)
	}
	var got process.Identity
	err = d.db.QueryRow(`SELECT pid, pid_start, pid_scope, host FROM zerotal_lock WHERE key = 'k'`).
		Scan(&got.PID, &got.Start, &got.Scope, &got.Host)
	if err != nil || got != odd {
		t.Fatalf("stored holder %+v, %v; want %+v", got, err, odd)
	}
}
