package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// locker is one worker's handle on the contended key, on connections of its
// own, as a separate process would have.
type locker interface {
	// Lock blocks until the worker holds the key, retrying whatever the
	// library's own attempts give up on, and returns an error only when ctx
	// ends or the backend fails.
	Lock(ctx context.Context) error
	// Unlock releases the key.
	Unlock(ctx context.Context) error
}

// scenario is the contention benchmark: workers that each take the key, hold
// it for about hold, release it and ask again at once.
type scenario struct {
	hold    time.Duration
	warmup  time.Duration // run before the measured window, so connections, subscriptions and queues settle
	measure time.Duration // the measured window
	// window, when not nil, is called as the measured window opens
	// (opening true) and closes, for counters kept outside the workers.
	window func(opening bool)
}

// unlockTimeout bounds a worker's release, which runs on a context of its
// own so that the last holder still releases when the scenario ends.
const unlockTimeout = 5 * time.Second

// stopTimeout bounds how long the workers may take to return once the
// scenario ends: a library that ignores its context is reported, not
// waited for for ever.
const stopTimeout = 30 * time.Second

// section is one critical section: when the worker asked, got the key and
// let it go (just before calling Unlock). Every time comes from this
// process's monotonic clock, so sections can be compared without Redis.
type section struct {
	worker                     int
	called, acquired, released time.Time
}

// contentionResult is what a scenario measured.
type contentionResult struct {
	workers      int
	window       time.Duration
	acquisitions int             // sections that began in the window
	perWorker    []int           // of those, per worker
	handoffs     []time.Duration // release to the next acquire by a worker that was waiting, for releases in the window, sorted
	again        int             // acquisitions in the window by the worker that held the key just before
	longestWait  time.Duration   // the longest wait that ended in the window or was still going at its end
	// worstWait is the wait (of those longestWait considers) that exceeds
	// its limit the most, and waitLimit that limit: the holds of the other
	// workers while it waited, each worker's longest once, plus waitSlack.
	// A queue keeps every wait under it; a lock where others take the key
	// again and again while one worker waits does not. The holds are
	// measured, not assumed, so a hold the machine stretched (a descheduled
	// worker) does not count against the lock.
	worstWait, waitLimit time.Duration
	meanHold             time.Duration
	// Overlapping critical sections over the whole run, found two ways: a
	// worker entering while the in-process counter said another was inside,
	// and sections in the log that intersect.
	overlapsSeen  int64
	overlapsInLog int
	lockErrors    int64 // Lock or Unlock failed for another reason than the end of the run
	stuck         bool  // some worker did not return within stopTimeout
}

// run runs the scenario with one worker per locker and returns what it
// measured.
func (s scenario) run(ctx context.Context, lockers []locker) contentionResult {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		inside, overlaps, errs atomic.Int64
		wg                     sync.WaitGroup
	)
	logs := make([][]section, len(lockers))
	waitingSince := make([]atomic.Int64, len(lockers)) // UnixNano of the pending Lock call, 0 when none
	start := time.Now()
	for w, l := range lockers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				called := time.Now()
				waitingSince[w].Store(called.UnixNano())
				err := l.Lock(runCtx)
				waitingSince[w].Store(0)
				if err != nil {
					if runCtx.Err() == nil {
						errs.Add(1)
						time.Sleep(time.Millisecond) // a failing backend is not spun on
					}
					continue
				}
				acquired := time.Now()
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				time.Sleep(s.hold)
				inside.Add(-1)
				released := time.Now()
				logs[w] = append(logs[w], section{w, called, acquired, released})
				uctx, ucancel := context.WithTimeout(context.WithoutCancel(runCtx), unlockTimeout)
				if err := l.Unlock(uctx); err != nil {
					errs.Add(1)
				}
				ucancel()
			}
		}()
	}

	opens := start.Add(s.warmup)
	sleepUntil(ctx, opens)
	if s.window != nil {
		s.window(true)
	}
	closes := opens.Add(s.measure)
	sleepUntil(ctx, closes)
	if s.window != nil {
		s.window(false)
	}
	closes = time.Now() // the window's true end, after any lateness of the timer
	type pending struct {
		worker int
		since  time.Time
	}
	var stillWaiting []pending
	for w := range waitingSince {
		if since := waitingSince[w].Load(); since != 0 {
			stillWaiting = append(stillWaiting, pending{w, time.Unix(0, since)})
		}
	}
	cancel()
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	stuck := false
	select {
	case <-stopped:
	case <-timer.C:
		stuck = true
	}

	r := contentionResult{
		workers:      len(lockers),
		window:       closes.Sub(opens),
		perWorker:    make([]int, len(lockers)),
		overlapsSeen: overlaps.Load(),
		lockErrors:   errs.Load(),
		stuck:        stuck,
	}
	if stuck {
		return r // the logs may still be written to
	}
	var all []section
	for _, l := range logs {
		all = append(all, l...)
	}
	slices.SortFunc(all, func(a, b section) int { return a.acquired.Compare(b.acquired) })
	r.overlapsInLog = overlapsIn(all)
	var maxHold time.Duration
	for _, sec := range all {
		maxHold = max(maxHold, sec.released.Sub(sec.acquired))
	}
	// judge records a wait of worker from called to acquired.
	judge := func(worker int, called, acquired time.Time) {
		wait := acquired.Sub(called)
		limit := othersHolds(all, maxHold, worker, called, acquired) + waitSlack
		r.longestWait = max(r.longestWait, wait)
		if r.waitLimit == 0 || wait-limit > r.worstWait-r.waitLimit {
			r.worstWait, r.waitLimit = wait, limit
		}
	}
	for _, p := range stillWaiting {
		judge(p.worker, p.since, closes)
	}
	var held time.Duration
	for i, sec := range all {
		if i > 0 && all[i-1].worker == sec.worker && !sec.acquired.Before(opens) && sec.acquired.Before(closes) {
			r.again++ // the releaser took the key back: no one was handed it
		}
		if !sec.released.Before(opens) && sec.released.Before(closes) {
			if h, ok := handoff(all, i); ok {
				r.handoffs = append(r.handoffs, h)
			}
		}
		if sec.acquired.Before(opens) || !sec.acquired.Before(closes) {
			continue
		}
		r.acquisitions++
		r.perWorker[sec.worker]++
		held += sec.released.Sub(sec.acquired)
		judge(sec.worker, sec.called, sec.acquired)
	}
	if r.acquisitions > 0 {
		r.meanHold = held / time.Duration(r.acquisitions)
	}
	slices.Sort(r.handoffs)
	return r
}

// handoff returns how long after all[i] was released the next worker that
// was already waiting then got the key; false when nobody else was waiting
// (or the log ends first). A releaser that takes the key back in between
// does not end the hand-off: its waiters are still waiting.
func handoff(all []section, i int) (time.Duration, bool) {
	for _, next := range all[i+1:] {
		if next.worker == all[i].worker {
			continue
		}
		if next.called.After(all[i].released) || next.acquired.Before(all[i].released) {
			return 0, false // nobody was waiting, or an overlap
		}
		return next.acquired.Sub(all[i].released), true
	}
	return 0, false
}

// othersHolds is the sum over the workers other than worker of the longest
// hold each had between from and to: what worker waits for when every other
// worker goes once before it.
// all is sorted by acquired and no hold lasts longer than maxHold, so only
// the sections from the first acquired after from-maxHold need a look.
func othersHolds(all []section, maxHold time.Duration, worker int, from, to time.Time) time.Duration {
	start, _ := slices.BinarySearchFunc(all, from.Add(-maxHold), func(s section, t time.Time) int { return s.acquired.Compare(t) })
	longest := map[int]time.Duration{}
	for _, sec := range all[start:] {
		if !sec.acquired.Before(to) {
			break
		}
		if sec.worker == worker || !sec.released.After(from) {
			continue
		}
		longest[sec.worker] = max(longest[sec.worker], sec.released.Sub(sec.acquired))
	}
	var sum time.Duration
	for _, d := range longest {
		sum += d
	}
	return sum
}

// overlapsIn counts the sections of all (sorted by acquired) that began
// before an earlier one ended.
func overlapsIn(all []section) int {
	n := 0
	var latestEnd time.Time
	for _, sec := range all {
		if sec.acquired.Before(latestEnd) {
			n++
		}
		if sec.released.After(latestEnd) {
			latestEnd = sec.released
		}
	}
	return n
}

// sleepUntil sleeps until t or until ctx ends.
func sleepUntil(ctx context.Context, t time.Time) {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	}
}
