package main

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"
)

// brokenLocker is a "lock" that never excludes anyone: every Lock succeeds
// at once.
type brokenLocker struct{}

func (brokenLocker) Lock(context.Context) error   { return nil }
func (brokenLocker) Unlock(context.Context) error { return nil }

// chanLock is a correct in-process lock: a one-slot channel.
type chanLock chan struct{}

// chanLocker is one worker's handle on a chanLock.
type chanLocker struct{ l chanLock }

func (c chanLocker) Lock(ctx context.Context) error {
	select {
	case c.l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c chanLocker) Unlock(context.Context) error {
	<-c.l
	return nil
}

// starvedLocker never gets the lock: its Lock waits for the end of the run.
type starvedLocker struct{}

func (starvedLocker) Lock(ctx context.Context) error {
	<-ctx.Done()
	return ctx.Err()
}

func (starvedLocker) Unlock(context.Context) error { return nil }

// quick is a scenario short enough for go test -short.
var quick = scenario{hold: time.Millisecond, warmup: 20 * time.Millisecond, measure: 200 * time.Millisecond}

func TestScenarioCountsOverlapsOfABrokenLock(t *testing.T) {
	r := quick.run(t.Context(), []locker{brokenLocker{}, brokenLocker{}, brokenLocker{}, brokenLocker{}})
	if r.acquisitions == 0 {
		t.Fatal("no acquisitions in the window")
	}
	if r.overlapsSeen == 0 {
		t.Errorf("the in-process counter saw no overlap among 4 workers of a lock that excludes nobody")
	}
	if r.overlapsInLog == 0 {
		t.Errorf("the log of critical sections shows no overlap among 4 workers of a lock that excludes nobody")
	}
	if v := (contentionRow{contentionResult: r, rtt: time.Millisecond}).verdicts(); v[4] {
		t.Errorf("a lock with %d/%d overlaps passes the exclusion target", r.overlapsSeen, r.overlapsInLog)
	}
}

func TestScenarioOfACorrectLock(t *testing.T) {
	l := make(chanLock, 1)
	const workers = 3
	lockers := make([]locker, workers)
	for i := range lockers {
		lockers[i] = chanLocker{l}
	}
	r := quick.run(t.Context(), lockers)
	if r.overlapsSeen != 0 || r.overlapsInLog != 0 {
		t.Fatalf("overlaps %d / %d with a correct lock; want none", r.overlapsSeen, r.overlapsInLog)
	}
	if r.acquisitions < 20 {
		t.Fatalf("%d acquisitions in %v of 1ms holds; want dozens", r.acquisitions, quick.measure)
	}
	sum := 0
	for _, n := range r.perWorker {
		sum += n
	}
	if sum != r.acquisitions {
		t.Fatalf("acquisitions per worker %v add up to %d, not %d", r.perWorker, sum, r.acquisitions)
	}
	if len(r.handoffs) == 0 || len(r.handoffs) > r.acquisitions+1 {
		t.Fatalf("%d hand-offs for %d acquisitions", len(r.handoffs), r.acquisitions)
	}
	if r.meanHold < quick.hold || r.meanHold > quick.hold+50*time.Millisecond {
		t.Fatalf("mean hold %v; want at least the %v sleep", r.meanHold, quick.hold)
	}
	if r.lockErrors != 0 || r.stuck {
		t.Fatalf("lock errors %d, stuck %v", r.lockErrors, r.stuck)
	}
}

func TestScenarioCountsAWaitThatNeverEnds(t *testing.T) {
	l := make(chanLock, 1)
	r := quick.run(t.Context(), []locker{chanLocker{l}, starvedLocker{}})
	// The starved worker waited from the start of the run to the end of
	// the window, though it never acquired: at least the whole window.
	if min := quick.measure; r.longestWait < min {
		t.Fatalf("longest wait %v; want at least %v, the starved worker's", r.longestWait, min)
	}
	if r.perWorker[1] != 0 {
		t.Fatalf("the starved worker acquired %d times", r.perWorker[1])
	}
	if j := jain(r.perWorker); j > 0.51 {
		t.Fatalf("Jain index %.3f with one worker starved; want 0.5", j)
	}
	// Nobody else holds while it waits but the one other worker, whose
	// every hold is 1ms: its limit is that plus the slack.
	if r.worstWait < quick.measure || r.waitLimit > waitSlack+500*time.Millisecond { // a 1ms sleep can take far longer on a loaded machine
		t.Fatalf("worst wait %v against limit %v; want the starved wait against about %v", r.worstWait, r.waitLimit, waitSlack+quick.hold)
	}
}

func TestScenarioWindowCallbacks(t *testing.T) {
	var mu sync.Mutex
	var calls []bool
	sc := quick
	sc.window = func(opening bool) {
		mu.Lock()
		calls = append(calls, opening)
		mu.Unlock()
	}
	sc.run(t.Context(), []locker{chanLocker{make(chanLock, 1)}})
	if len(calls) != 2 || !calls[0] || calls[1] {
		t.Fatalf("window called with %v; want [true false]", calls)
	}
}

func TestHandOffAndWaitLimitFromTheLog(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	sec := func(w, called, from, to int) section { return section{w, at(called), at(from), at(to)} }
	// Worker 0 releases at 2 and takes the key back at once, twice, while
	// worker 1 has waited since 1; worker 1 gets it at 9.
	all := []section{sec(0, 0, 0, 2), sec(0, 2, 2, 5), sec(0, 5, 5, 8), sec(1, 1, 9, 10)}
	if h, ok := handoff(all, 0); !ok || h != 7*time.Millisecond {
		t.Fatalf("hand-off after the first release = %v, %v; want 7ms (until the waiter got it, not the releaser)", h, ok)
	}
	if _, ok := handoff(all, 3); ok {
		t.Fatal("a hand-off after the last section")
	}
	// Worker 1 waited 8ms, while worker 0 held three times: its limit
	// counts worker 0 once, with its longest hold (3ms).
	if got := othersHolds(all, 3*time.Millisecond, 1, at(1), at(9)); got != 3*time.Millisecond {
		t.Fatalf("othersHolds = %v; want 3ms", got)
	}
	// Nobody was waiting when the first section ended.
	lone := []section{sec(0, 0, 0, 1), sec(1, 3, 3, 4)}
	if _, ok := handoff(lone, 0); ok {
		t.Fatal("a hand-off to a worker that was not waiting yet")
	}
}

func TestOverlapsIn(t *testing.T) {
	at := func(ms int) time.Time { return time.Unix(0, 0).Add(time.Duration(ms) * time.Millisecond) }
	sec := func(from, to int) section { return section{acquired: at(from), released: at(to)} }
	for _, tc := range []struct {
		name string
		all  []section
		want int
	}{
		{"none", nil, 0},
		{"disjoint", []section{sec(0, 1), sec(1, 2), sec(3, 4)}, 0},
		{"one inside another", []section{sec(0, 10), sec(2, 3), sec(4, 5)}, 2},
		{"chained", []section{sec(0, 2), sec(1, 3), sec(2, 4)}, 2},
	} {
		if got := overlapsIn(tc.all); got != tc.want {
			t.Errorf("%s: overlapsIn = %d; want %d", tc.name, got, tc.want)
		}
	}
}

func TestJain(t *testing.T) {
	for _, tc := range []struct {
		xs   []int
		want float64
	}{
		{[]int{5, 5, 5, 5}, 1},
		{[]int{8, 0, 0, 0}, 0.25},
		{[]int{1, 3}, 16.0 / 20},
		{nil, 0},
		{[]int{0, 0}, 0},
	} {
		if got := jain(tc.xs); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("jain(%v) = %v; want %v", tc.xs, got, tc.want)
		}
	}
}

func TestPercentileAndMedian(t *testing.T) {
	ds := []time.Duration{5, 1, 4, 2, 3}
	if got := percentile(ds, 0.5); got != 3 {
		t.Errorf("p50 of 1..5 = %v; want 3", got)
	}
	if got := percentile(ds, 0.99); got != 5 {
		t.Errorf("p99 of 1..5 = %v; want 5", got)
	}
	if got := percentile(nil, 0.5); got != 0 {
		t.Errorf("p50 of nothing = %v; want 0", got)
	}
	if got := median([]float64{3, 1, 2, 4}); got != 2.5 {
		t.Errorf("median of 1..4 = %v; want 2.5", got)
	}
}

func TestVerdicts(t *testing.T) {
	good := contentionRow{
		contentionResult: contentionResult{
			workers: 4, acquisitions: 100, perWorker: []int{25, 25, 25, 25},
			handoffs: []time.Duration{100, 200, 300}, longestWait: 10 * time.Millisecond, meanHold: time.Millisecond,
			worstWait: 10 * time.Millisecond, waitLimit: 14 * time.Millisecond,
		},
		rtt: 100, roundTrips: 3,
	}
	if v := good.verdicts(); v != [5]bool{true, true, true, true, true} {
		t.Fatalf("verdicts of a row meeting every target = %v", v)
	}
	for name, tc := range map[string]struct {
		change func(*contentionRow)
		failed int
	}{
		"slow hand-off":   {func(r *contentionRow) { r.handoffs = []time.Duration{400, 400, 400} }, 0},
		"no hand-off":     {func(r *contentionRow) { r.handoffs = nil }, 0},
		"spinning":        {func(r *contentionRow) { r.roundTrips = 3.01 }, 1},
		"unfair":          {func(r *contentionRow) { r.perWorker = []int{97, 1, 1, 1} }, 2},
		"starved":         {func(r *contentionRow) { r.worstWait = 15 * time.Millisecond }, 3},
		"overlap counted": {func(r *contentionRow) { r.overlapsSeen = 1 }, 4},
		"overlap in log":  {func(r *contentionRow) { r.overlapsInLog = 1 }, 4},
	} {
		r := good
		r.perWorker = append([]int(nil), good.perWorker...)
		tc.change(&r)
		v := r.verdicts()
		for i, ok := range v {
			if ok == (i == tc.failed) {
				t.Errorf("%s: verdicts = %v; want only target %d failed", name, v, tc.failed)
				break
			}
		}
	}
}
