package postgres

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/zerotal/lock/drivers/postgres/postgrestest"
)

// The uncontended benchmarks run on a private server (postgrestest, with
// PostgreSQL's durable defaults: fsync and synchronous_commit on), each on a
// pgx pool of its own, so only what runs per iteration differs:
//
//   - BenchmarkCycle: Driver.AcquireFenced + Driver.Release, one statement
//     each (a call of the driver's acquire and release functions).
//   - BenchmarkBare: the two statements a TTL lease lock in PostgreSQL needs
//     at the least, on a table of key, owner and expiry: an INSERT … ON
//     CONFLICT DO UPDATE … WHERE expired, and an owner-guarded DELETE. No
//     token, no holder record, no queue: the floor the driver is measured
//     against.
//   - in BenchmarkSideBySide only, "same": the driver's own common-case
//     statements (take a free row, release it) sent bare, without the
//     fallback to the functions that handle the other cases, so that
//     cycle/same is what that wrapping costs.
//   - BenchmarkSideBySide: the two interleaved in one loop, each cycle
//     timed on its own, so that load from other processes (and the disk's
//     flushes) falls on both alike; it reports the medians and their ratio,
//     on a durable server and on one with fsync off.
//
//	go test -run '^$' -bench 'Cycle|Bare|SideBySide' -benchtime 2000x -count 3 .

const benchKey = "zerotal_lock:bench"

// The minimal lease lock of BenchmarkBare.
const (
	bareTable   = `CREATE TABLE bare_lock (key text COLLATE "C" PRIMARY KEY, owner text NOT NULL, expires_at timestamptz NOT NULL)`
	bareAcquire = `INSERT INTO bare_lock AS l (key, owner, expires_at) VALUES ($1, $2, clock_timestamp() + $3 * interval '1 microsecond')
ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at
WHERE l.expires_at <= clock_timestamp()`
	bareRelease = `DELETE FROM bare_lock WHERE key = $1 AND owner = $2 AND expires_at > clock_timestamp()`
)

func BenchmarkCycle(b *testing.B) {
	run := newDriverCycle(b, benchServer(b).URL())
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

func BenchmarkBare(b *testing.B) {
	run := newBareCycle(b, benchServer(b).URL())
	b.ReportAllocs()
	for b.Loop() {
		run()
	}
}

func BenchmarkSideBySide(b *testing.B) {
	// With fsync on, a commit's flush is most of a cycle; with it off, the
	// statements' own work is, so the ratio shows the driver's overhead at
	// its most visible.
	for _, fsync := range []string{"on", "off"} {
		b.Run("fsync="+fsync, func(b *testing.B) {
			url := postgrestest.Start(b, postgrestest.Setting("fsync", fsync)).URL()
			runs := [3]func(){newDriverCycle(b, url), newBareCycle(b, url), newSameCycle(b, url)}
			var took [3][]time.Duration
			i := 0
			for b.Loop() {
				for j := range runs {
					k := (i + j) % len(runs) // neither always runs first
					start := time.Now()
					runs[k]()
					took[k] = append(took[k], time.Since(start))
				}
				i++
			}
			cycle, bare, same := median(took[0]), median(took[1]), median(took[2])
			b.ReportMetric(cycle, "cycle-p50-ns")
			b.ReportMetric(bare, "bare-p50-ns")
			b.ReportMetric(same, "same-p50-ns")
			b.ReportMetric(cycle/bare, "cycle/bare")
			b.ReportMetric(cycle/same, "cycle/same")
			b.ReportMetric(0, "ns/op") // the sum of the three says nothing
		})
	}
}

// benchServer starts the private server of a benchmark, with PostgreSQL's
// durable defaults.
func benchServer(b *testing.B) *postgrestest.Server {
	return postgrestest.Start(b)
}

// median returns the middle of d in nanoseconds.
func median(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return float64(d[len(d)/2])
}

// newDriverCycle returns one acquire+release through a Driver on url.
func newDriverCycle(b *testing.B, url string) func() {
	d := openDriver(b, url, DefaultTable)
	ctx := context.Background()
	owner := newOwner()
	return func() {
		if _, ok, err := d.AcquireFenced(ctx, benchKey, owner, time.Minute); !ok || err != nil {
			b.Fatalf("AcquireFenced = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, benchKey, owner); !ok || err != nil {
			b.Fatalf("Release = %v, %v", ok, err)
		}
	}
}

// newBareCycle returns one acquire+release of the minimal lease lock.
func newBareCycle(b *testing.B, url string) func() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	if _, err := pool.Exec(ctx, bareTable); err != nil {
		b.Fatal(err)
	}
	owner := newOwner()
	ttl := time.Minute.Microseconds()
	return func() {
		tag, err := pool.Exec(ctx, bareAcquire, benchKey, owner, ttl)
		if err != nil || tag.RowsAffected() != 1 {
			b.Fatalf("bare acquire = %v, %v", tag, err)
		}
		tag, err = pool.Exec(ctx, bareRelease, benchKey, owner)
		if err != nil || tag.RowsAffected() != 1 {
			b.Fatalf("bare release = %v, %v", tag, err)
		}
	}
}

// newSameCycle returns the driver's common-case statements run bare on the
// driver's table: takeFree, and the release's UPDATE.
func newSameCycle(b *testing.B, url string) func() {
	d := openDriver(b, url, DefaultTable)
	ctx := context.Background()
	if _, err := d.Exists(ctx, benchKey); err != nil { // creates the table
		b.Fatal(err)
	}
	const key = benchKey + ":same"
	owner := newOwner()
	if _, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute); !ok || err != nil { // creates the row
		b.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	if ok, err := d.Release(ctx, key, owner); !ok || err != nil {
		b.Fatalf("Release = %v, %v", ok, err)
	}
	r := strings.NewReplacer("{locks}", d.table.quoted())
	take := r.Replace(takeFree)
	release := r.Replace(`UPDATE {locks} l SET owner = '', expires_at = clock_timestamp(), pid = 0, host = ''
WHERE l.key = $1::text AND l.owner = $2::text AND l.expires_at > clock_timestamp() AND NOT l.queued`)
	ttl := time.Minute.Microseconds()
	return func() {
		var token int64
		if err := d.pool.QueryRow(ctx, take, key, owner, ttl, d.pid, d.host).Scan(&token); err != nil {
			b.Fatalf("take = %v", err)
		}
		if tag, err := d.pool.Exec(ctx, release, key, owner); err != nil || tag.RowsAffected() != 1 {
			b.Fatalf("release = %v, %v", tag, err)
		}
	}
}
