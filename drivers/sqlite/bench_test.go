package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// The benchmarks below run side by side in one `go test -bench` run, each on
// its own new file database opened by this package (WAL, synchronous=NORMAL,
// one connection), so only what runs per iteration differs:
//
//   - BenchmarkCycle: Driver.AcquireFenced + Driver.Release.
//   - BenchmarkBareStatements: the same two prepared SQL statements with the
//     same arguments, straight through database/sql: the floor for this
//     schema; Cycle/Bare is the driver's own overhead.
//   - BenchmarkMinimalStatements: the smallest statements a TTL lock needs
//     (key, owner, expiry; no token, holder or dead-holder check), to show
//     what the richer row costs.

const benchKey = "zerotal_lock:bench"

func BenchmarkCycle(b *testing.B) {
	d := benchDriver(b)
	ctx := context.Background()
	owner := newOwner(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, err := d.AcquireFenced(ctx, benchKey, owner, time.Minute); !ok || err != nil {
			b.Fatalf("AcquireFenced = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, benchKey, owner); !ok || err != nil {
			b.Fatalf("Release = %v, %v", ok, err)
		}
	}
}

func BenchmarkBareStatements(b *testing.B) {
	d := benchDriver(b)
	acquire, release := benchPrepare(b, d.db, sqlAcquire, sqlRelease)
	ctx := context.Background()
	owner := newOwner(b)
	self := currentProcess()
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now().UnixNano()
		var token int64
		if err := acquire.QueryRowContext(ctx, benchKey, owner, now, now+int64(time.Minute),
			self.pid, self.start, self.scope, self.host).Scan(&token); err != nil {
			b.Fatal(err)
		}
		if _, err := release.ExecContext(ctx, benchKey, owner, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMinimalStatements(b *testing.B) {
	d := benchDriver(b)
	if _, err := d.db.Exec(`CREATE TABLE minimal_lock (
		key TEXT NOT NULL PRIMARY KEY, owner TEXT NOT NULL, expires_ns INTEGER NOT NULL
	) WITHOUT ROWID`); err != nil {
		b.Fatal(err)
	}
	acquire, release := benchPrepare(b, d.db,
		`INSERT INTO minimal_lock (key, owner, expires_ns) VALUES (?1, ?2, ?4)
		ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires_ns = excluded.expires_ns
		WHERE expires_ns <= ?3`,
		`DELETE FROM minimal_lock WHERE key = ?1 AND owner = ?2`)
	ctx := context.Background()
	owner := newOwner(b)
	b.ReportAllocs()
	for b.Loop() {
		now := time.Now().UnixNano()
		res, err := acquire.ExecContext(ctx, benchKey, owner, now, now+int64(time.Minute))
		if err != nil {
			b.Fatal(err)
		}
		if n, err := res.RowsAffected(); n != 1 || err != nil {
			b.Fatalf("acquire changed %d rows: %v", n, err)
		}
		if _, err := release.ExecContext(ctx, benchKey, owner); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDriver(b *testing.B) *Driver {
	b.Helper()
	return openPath(b, filepath.Join(b.TempDir(), "bench.db"))
}

func benchPrepare(b *testing.B, db *sql.DB, acquireSQL, releaseSQL string) (acquire, release *sql.Stmt) {
	b.Helper()
	acquire, err := db.Prepare(acquireSQL)
	if err != nil {
		b.Fatal(err)
	}
	release, err = db.Prepare(releaseSQL)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = acquire.Close(); _ = release.Close() })
	return acquire, release
}
