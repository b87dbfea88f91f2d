package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zerotal/lock/driver/process"
)

// Each benchmark below works on its own new file database opened by this
// package (WAL, synchronous=NORMAL, one connection), so only what runs per
// iteration differs:
//
//   - BenchmarkCycle: Driver.AcquireFenced + Driver.Release.
//   - BenchmarkBareStatements: the same two prepared SQL statements with the
//     same arguments, straight through database/sql: the floor for this
//     schema, so Cycle/Bare is the driver's own overhead.
//   - BenchmarkMinimalStatements: the smallest statements a TTL lock needs
//     (key, owner, expiry; no token, holder or dead-holder check), to show
//     what the richer row costs.
//   - BenchmarkSideBySide: the three interleaved in one loop, each cycle timed
//     on its own, so that load from other processes falls on all three alike;
//     it reports their median costs and the ratios as metrics.

const benchKey = "zerotal_lock:bench"

func BenchmarkCycle(b *testing.B) {
	run := newDriverCycle(b)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

func BenchmarkBareStatements(b *testing.B) {
	run := newBareCycle(b)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

func BenchmarkMinimalStatements(b *testing.B) {
	run := newMinimalCycle(b)
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

func BenchmarkSideBySide(b *testing.B) {
	runs := [3]func(){newDriverCycle(b), newBareCycle(b), newMinimalCycle(b)}
	var took [3][]time.Duration
	i := 0
	for b.Loop() {
		// Rotate the order so that none of the three always runs first.
		for j := range runs {
			k := (i + j) % len(runs)
			start := time.Now()
			runs[k]()
			took[k] = append(took[k], time.Since(start))
		}
		i++
	}
	// Medians: a WAL checkpoint (an fsync every few hundred cycles) or a
	// preemption by another process lands on one of the three at random
	// and would swing a mean far more than the difference measured here.
	cycle, bare, minimal := median(took[0]), median(took[1]), median(took[2])
	b.ReportMetric(cycle, "cycle-p50-ns")
	b.ReportMetric(bare, "bare-p50-ns")
	b.ReportMetric(minimal, "minimal-p50-ns")
	b.ReportMetric(cycle/bare, "cycle/bare")
	b.ReportMetric(cycle/minimal, "cycle/minimal")
	b.ReportMetric(0, "ns/op") // the sum of the three says nothing
}

// median returns the middle of d in nanoseconds.
func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[len(d)/2])
}

// newDriverCycle returns one acquire+release through a Driver.
func newDriverCycle(b *testing.B) func() {
	d := benchDriver(b)
	ctx := context.Background()
	owner := newOwner(b)
	return func() {
		if _, ok, err := d.AcquireFenced(ctx, benchKey, owner, time.Minute); !ok || err != nil {
			b.Fatalf("AcquireFenced = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, benchKey, owner); !ok || err != nil {
			b.Fatalf("Release = %v, %v", ok, err)
		}
	}
}

// newBareCycle returns the driver's two statements run directly. A NULL
// acquisition id makes the acquire statement note no token, so the driver's
// token bookkeeping counts as driver overhead.
func newBareCycle(b *testing.B) func() {
	d := benchDriver(b)
	acquire, release := benchPrepare(b, d.db, acquireSQL(process.Self()), sqlRelease)
	ctx := context.Background()
	owner := newOwner(b)
	return func() {
		now := time.Now().UnixNano()
		res, err := acquire.ExecContext(ctx, benchKey, owner, now, now+int64(time.Minute), nil, int64(1)<<epochShift)
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

// newMinimalCycle returns the two smallest statements of a TTL lock.
func newMinimalCycle(b *testing.B) func() {
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
	return func() {
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
