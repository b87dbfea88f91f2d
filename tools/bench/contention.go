package main

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// The contention targets of issue 3, all of which one library must meet at
// once.
const (
	handoffTargetRTTs = 3                     // median release-to-acquire, in PING round trips
	roundTripTarget   = 3                     // round trips per acquisition, pub/sub included
	fairnessTarget    = 0.95                  // Jain's index of acquisitions per worker
	waitSlack         = 10 * time.Millisecond // the longest wait may exceed the workers' combined hold by this
	idleRTTPings      = 500                   // PINGs of the tight loop before each scenario
)

// contentionRow is one library at one worker count.
type contentionRow struct {
	library string
	contentionResult
	rtt        time.Duration // median PING during the scenario: the unit of the hand-off target
	idleRTT    time.Duration // median PING of a tight loop just before it
	roundTrips float64       // per acquisition: client requests plus PUBLISH and (UN)SUBSCRIBE
	pubsub     float64       // of which PUBLISH and (UN)SUBSCRIBE
	err        error
}

// runContention runs c with workers workers on a fresh key.
func runContention(ctx context.Context, s *server, c contender, workers int, sc scenario, key string) contentionRow {
	row := contentionRow{library: c.name}
	control, probeClient := s.newClient(nil), s.newClient(nil)
	defer control.Close()
	defer probeClient.Close()
	idle, err := measureRTT(ctx, probeClient, idleRTTPings)
	if err != nil {
		row.err = err
		return row
	}
	row.idleRTT = idle

	sent := &commandCounter{}
	lockers := make([]locker, workers)
	for w := range workers {
		l, closeLocker := c.newLocker(s, key, sent)
		defer closeLocker()
		lockers[w] = l
	}
	var (
		statsBefore, statsAfter commandStats
		sentBefore, sentAfter   int64
		statsErr, probeErr      error
		probe                   *rttProbe
	)
	sc.window = func(opening bool) {
		stats, err := readCommandStats(ctx, control)
		if err != nil {
			statsErr = err
		}
		if opening {
			statsBefore, sentBefore = stats, sent.n.Load()
			probe = startRTTProbe(ctx, probeClient)
		} else {
			statsAfter, sentAfter = stats, sent.n.Load()
			row.rtt, probeErr = probe.median()
		}
	}
	row.contentionResult = sc.run(ctx, lockers)
	switch {
	case statsErr != nil:
		row.err = statsErr
	case probeErr != nil:
		row.err = probeErr
	case row.stuck:
		row.err = fmt.Errorf("workers still running %v after the scenario ended", stopTimeout)
	case row.acquisitions > 0:
		pubsub := pubsubCalls(statsBefore, statsAfter)
		row.pubsub = float64(pubsub) / float64(row.acquisitions)
		row.roundTrips = float64(sentAfter-sentBefore+pubsub) / float64(row.acquisitions)
	}
	return row
}

// handoffRTTs is the median hand-off in round trips.
func (r contentionRow) handoffRTTs() float64 {
	if r.rtt == 0 {
		return 0
	}
	return float64(percentile(r.handoffs, 0.5)) / float64(r.rtt)
}

// handoffIdleRTTs is the median hand-off in idle round trips.
func (r contentionRow) handoffIdleRTTs() float64 {
	if r.idleRTT == 0 {
		return 0
	}
	return float64(percentile(r.handoffs, 0.5)) / float64(r.idleRTT)
}

// verdicts says, target by target, whether r meets it: hand-off, round
// trips, fairness, longest wait, exclusion.
func (r contentionRow) verdicts() [5]bool {
	ok := r.err == nil && r.acquisitions > 0
	return [5]bool{
		ok && len(r.handoffs) > 0 && r.handoffRTTs() <= handoffTargetRTTs,
		ok && r.roundTrips <= roundTripTarget,
		ok && jain(r.perWorker) >= fairnessTarget,
		ok && r.worstWait <= r.waitLimit,
		ok && r.overlapsSeen == 0 && r.overlapsInLog == 0,
	}
}

// cells renders r as a row of the contention table.
func (r contentionRow) cells() []string {
	if r.err != nil {
		return []string{r.library, strconv.Itoa(r.workers), "error: " + r.err.Error()}
	}
	v := r.verdicts()
	all := v[0] && v[1] && v[2] && v[3] && v[4]
	return []string{
		r.library,
		strconv.Itoa(r.workers),
		strconv.Itoa(r.acquisitions),
		fmt.Sprintf("%.0f", float64(r.acquisitions)/r.window.Seconds()),
		fmt.Sprintf("%.0f%%", 100*float64(r.again)/float64(r.acquisitions)),
		fmt.Sprintf("%s / %s", micros(r.idleRTT), micros(r.rtt)),
		fmt.Sprintf("%s (%.1f / %.1f)", micros(percentile(r.handoffs, 0.5)), r.handoffIdleRTTs(), r.handoffRTTs()),
		micros(percentile(r.handoffs, 0.99)),
		fmt.Sprintf("%.2f (%.2f)", r.roundTrips, r.pubsub),
		fmt.Sprintf("%.3f", jain(r.perWorker)),
		millis(r.longestWait),
		fmt.Sprintf("%s / %s", millis(r.worstWait), millis(r.waitLimit)),
		fmt.Sprintf("%d / %d", r.overlapsSeen, r.overlapsInLog),
		pass(v[0]), pass(v[1]), pass(v[2]), pass(v[3]), pass(v[4]),
		pass(all),
	}
}

// contentionHeader is the header of the contention table.
var contentionHeader = []string{
	"library", "workers", "acquisitions", "acq/s", "releaser again", "RTT µs idle / loaded",
	"hand-off p50 µs (idle / loaded RTTs)", "hand-off p99 µs", "round trips/acq (pub/sub)", "Jain",
	"longest wait ms", "worst wait / its limit ms", "overlaps (counter / log)",
	"hand-off ≤3 RTT", "≤3 RT/acq", "Jain ≥0.95", "wait", "0 overlaps", "all",
}

// micros formats d in microseconds.
func micros(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) }

// millis formats d in milliseconds with one decimal.
func millis(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// pass renders a verdict.
func pass(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}
