package postgres

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/zerotal/lock/drivers/postgres/postgrestest"
)

// The contention harness: workers that each take one key, hold it for
// about contentionHold, release it and ask again at once, each on
// connections of its own as separate processes would be. It measures, from
// this process's monotonic clock:
//
//   - hand-off: from a release (just before the holder calls its unlock) to
//     the next acquisition by a worker that was already waiting;
//   - fairness: Jain's index of the acquisitions per worker (1 when all
//     have the same count, 1/n when one has them all);
//   - the longest wait: from a worker's lock call to its acquisition;
//   - overlapping critical sections, which must be none.
//
// Hand-offs are also given in round trips of the server, measured on its
// own connection every 5ms while the workers run: the median of "SELECT 1"
// (a read round trip) and of a one-row UPDATE (a round trip with a commit,
// the unit a release costs). The medians measured idle, just before, are
// reported too.

// contentionHold is each worker's critical section.
const contentionHold = time.Millisecond

// locker is one worker's handle on the contended key.
type locker interface {
	// Lock blocks until the worker holds the key and returns an error only
	// when ctx ends or the backend fails.
	Lock(ctx context.Context) error
	// Unlock releases the key.
	Unlock(ctx context.Context) error
}

// section is one critical section: when the worker asked, got the key and
// let it go.
type section struct {
	worker                     int
	called, acquired, released time.Time
}

// contentionResult is what runContention measured.
type contentionResult struct {
	workers      int
	acquisitions int
	elapsed      time.Duration
	perWorker    []int
	handoffs     []time.Duration // sorted
	longestWait  time.Duration
	overlaps     int64
	errors       int64
}

// runContention runs one worker per locker until they have made total
// acquisitions between them (or ctx ends).
func runContention(ctx context.Context, lockers []locker, total int) contentionResult {
	var (
		inside, overlaps, errs, taken atomic.Int64
		wg                            sync.WaitGroup
	)
	logs := make([][]section, len(lockers))
	start := time.Now()
	for w, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil && taken.Load() < int64(total) {
				called := time.Now()
				if err := l.Lock(ctx); err != nil {
					if ctx.Err() == nil {
						errs.Add(1)
						time.Sleep(time.Millisecond) // a failing backend is not spun on
					}
					continue
				}
				acquired := time.Now()
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(contentionHold) // the work done under the lock
				inside.Add(-1)
				taken.Add(1)
				released := time.Now()
				logs[w] = append(logs[w], section{w, called, acquired, released})
				uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
				if err := l.Unlock(uctx); err != nil {
					errs.Add(1)
				}
				cancel()
			}
		}()
	}
	wg.Wait()
	r := contentionResult{
		workers:   len(lockers),
		elapsed:   time.Since(start),
		perWorker: make([]int, len(lockers)),
		overlaps:  overlaps.Load(),
		errors:    errs.Load(),
	}
	var all []section
	for w, l := range logs {
		all = append(all, l...)
		r.perWorker[w] = len(l)
	}
	r.acquisitions = len(all)
	slices.SortFunc(all, func(a, b section) int { return a.acquired.Compare(b.acquired) })
	for i, s := range all {
		r.longestWait = max(r.longestWait, s.acquired.Sub(s.called))
		if i+1 < len(all) {
			next := all[i+1]
			if next.worker != s.worker && next.called.Before(s.released) {
				r.handoffs = append(r.handoffs, next.acquired.Sub(s.released))
			}
		}
	}
	slices.Sort(r.handoffs)
	return r
}

// jain is Jain's fairness index of counts.
func jain(counts []int) float64 {
	var sum, squares float64
	for _, c := range counts {
		sum += float64(c)
		squares += float64(c) * float64(c)
	}
	if squares == 0 {
		return 0
	}
	return sum * sum / (float64(len(counts)) * squares)
}

// percentile returns the p-th quantile of sorted d.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(len(d)-1, int(math.Ceil(p*float64(len(d))))-1)]
}

// rttProbe measures the read and write round trips of a server: "SELECT 1",
// and a one-row UPDATE of a logged table committed on its own, the unit a
// release costs.
type rttProbe struct {
	conn  *pgx.Conn
	table string
}

func newRTTProbe(tb testing.TB, url string) *rttProbe {
	tb.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	// A logged table, unlike a temporary one, so that each UPDATE
	// flushes its commit as a release does.
	p := &rttProbe{conn: conn, table: quoteIdent("zltest_rtt_" + randomID())}
	if _, err := conn.Exec(ctx, `CREATE TABLE `+p.table+` (n bigint); INSERT INTO `+p.table+` VALUES (0)`); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_, _ = conn.Exec(ctx, `DROP TABLE `+p.table)
		_ = conn.Close(ctx)
	})
	return p
}

// measure takes one read and one write round trip.
func (p *rttProbe) measure(ctx context.Context) (read, write time.Duration, err error) {
	start := time.Now()
	if _, err := p.conn.Exec(ctx, `SELECT 1`); err != nil {
		return 0, 0, err
	}
	read = time.Since(start)
	start = time.Now()
	if _, err := p.conn.Exec(ctx, `UPDATE `+p.table+` SET n = n + 1`); err != nil {
		return 0, 0, err
	}
	return read, time.Since(start), nil
}

// idle returns the median round trips of n measurements in a row.
func (p *rttProbe) idle(tb testing.TB, n int) (read, write time.Duration) {
	tb.Helper()
	reads, writes := make([]time.Duration, n), make([]time.Duration, n)
	for i := range n {
		var err error
		if reads[i], writes[i], err = p.measure(context.Background()); err != nil {
			tb.Fatal(err)
		}
	}
	return medianOf(reads), medianOf(writes)
}

// during measures every 5ms until stop is called, which returns the median
// round trips seen: the server's round trips under the load being measured.
func (p *rttProbe) during() (stop func() (read, write time.Duration)) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var reads, writes []time.Duration
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			r, w, err := p.measure(ctx)
			if err != nil {
				return
			}
			reads, writes = append(reads, r), append(writes, w)
			t := time.NewTimer(5 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
		}
	}()
	return func() (time.Duration, time.Duration) {
		cancel()
		<-done
		return medianOf(reads), medianOf(writes)
	}
}

// medianOf returns the median of d (which it sorts), 0 for none.
func medianOf(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}

// benchContention warms lockers up, then runs b.N acquisitions between them
// with an RTT probe alongside, and reports.
func benchContention(b *testing.B, url string, lockers []locker) {
	probe := newRTTProbe(b, url)
	idleRead, idleWrite := probe.idle(b, 200)
	// Create the schema and start every listener before the clock runs.
	if warm := runContention(b.Context(), lockers, 80); warm.errors != 0 {
		b.Fatalf("%d errors while warming up", warm.errors)
	}
	stop := probe.during()
	b.ResetTimer()
	r := runContention(b.Context(), lockers, max(b.N, 8))
	b.StopTimer()
	read, write := stop()
	r.report(b, read, write)
	b.ReportMetric(float64(idleRead.Microseconds()), "idle-read-RTT-µs")
	b.ReportMetric(float64(idleWrite.Microseconds()), "idle-write-RTT-µs")
	b.ReportMetric(float64(read.Microseconds()), "read-RTT-µs")
	b.ReportMetric(float64(write.Microseconds()), "write-RTT-µs")
}

// report puts r's numbers on b, with the hand-off in the round trips read
// and write.
func (r contentionResult) report(b *testing.B, read, write time.Duration) {
	p50 := percentile(r.handoffs, 0.5)
	b.ReportMetric(float64(p50.Microseconds()), "handoff-p50-µs")
	b.ReportMetric(float64(percentile(r.handoffs, 0.99).Microseconds()), "handoff-p99-µs")
	b.ReportMetric(float64(p50)/float64(read), "handoff-p50/read-RTT")
	b.ReportMetric(float64(p50)/float64(write), "handoff-p50/write-RTT")
	b.ReportMetric(jain(r.perWorker), "jain")
	b.ReportMetric(float64(r.longestWait.Microseconds())/1000, "longest-wait-ms")
	b.ReportMetric(float64(r.acquisitions)/r.elapsed.Seconds(), "acq/s")
	b.ReportMetric(float64(r.overlaps), "overlaps")
	b.ReportMetric(float64(r.errors), "errors")
}

// driverLocker is a worker on a Driver of its own, blocking in AcquireWait
// as the engine's Block does.
type driverLocker struct {
	d     *Driver
	key   string
	owner string
}

func (l *driverLocker) Lock(ctx context.Context) error {
	l.owner = newOwner()
	_, err := l.d.AcquireWait(ctx, l.key, l.owner, 10*time.Second)
	return err
}

func (l *driverLocker) Unlock(ctx context.Context) error {
	ok, err := l.d.Release(ctx, l.key, l.owner)
	if err == nil && !ok {
		err = fmt.Errorf("release of a held key returned false")
	}
	return err
}

// driverLockers returns n workers on Drivers of their own on url.
func driverLockers(tb testing.TB, url, key string, n int) []locker {
	lockers := make([]locker, n)
	for i := range lockers {
		lockers[i] = &driverLocker{d: openDriver(tb, url, DefaultTable), key: key}
	}
	return lockers
}

// BenchmarkContention runs 8 workers on one key through the Driver on a
// private server; b.N is the number of acquisitions between them, so
// ns/op is the time per acquisition.
//
//	go test -run '^$' -bench Contention -benchtime 1000x -count 3 .
func BenchmarkContention(b *testing.B) {
	s := postgrestest.Start(b)
	benchContention(b, s.URL(), driverLockers(b, s.URL(), benchKey, 8))
}

// TestContentionIsFairWithEightWorkers checks what the queue promises when
// 8 workers on separate Drivers contend for one key, each asking again at
// once: no overlap, no error, and every worker served in turn (Jain's index
// at least 0.95), with hand-offs that come from notices, not polls (the
// workers poll hourly).
func TestContentionIsFairWithEightWorkers(t *testing.T) {
	w := newWaitSetup(t)
	const workers = 8
	key := testKey("eight")
	lockers := make([]locker, workers)
	for i := range lockers {
		lockers[i] = &driverLocker{d: w.open(t, noPolls), key: key}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	r := runContention(ctx, lockers, 25*workers)
	if r.overlaps != 0 || r.errors != 0 {
		t.Fatalf("%d overlapping critical sections, %d errors", r.overlaps, r.errors)
	}
	if j := jain(r.perWorker); j < 0.95 {
		t.Fatalf("Jain's index %.3f over acquisitions per worker %v; want at least 0.95", j, r.perWorker)
	}
	t.Logf("8 workers: %d acquisitions in %v, hand-off p50 %v p99 %v, longest wait %v, per worker %v",
		r.acquisitions, r.elapsed.Round(time.Millisecond), percentile(r.handoffs, 0.5), percentile(r.handoffs, 0.99), r.longestWait, r.perWorker)
}
