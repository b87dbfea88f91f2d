package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"testing"
	"time"
)

// stressConfig is one stress worker's job.
type stressConfig struct {
	key        string
	marker     string // a file each holder creates exclusively while inside
	iterations int
	ttl        time.Duration
	// overstayEvery makes every n-th hold sleep past its TTL, so that the
	// others reclaim it while its holder still runs; 0 never does.
	overstayEvery int
}

// hold is one acquisition: [start, end] lies inside the time its holder
// certainly held the lock, and released says whether Release returned true.
// A hold that Release confirmed was certain from Acquire to Release; one that
// Release refused (its lease passed while it overstayed) was certain only
// until its lease could have ended.
type hold struct {
	start, end int64 // wall clock, Unix ns: comparable across processes
	released   bool
}

// stressResult is what one worker saw.
type stressResult struct {
	holds    []hold
	overlaps int // times the marker already existed on entry
}

// stressWorker takes cfg.key cfg.iterations times, polling while it is held,
// and records every hold.
func stressWorker(ctx context.Context, d *Driver, cfg stressConfig) (stressResult, error) {
	var res stressResult
	for i := range cfg.iterations {
		owner := newOwner()
		deadline := time.Now().Add(30 * time.Second)
		var called time.Time
		for {
			called = time.Now()
			ok, err := d.Acquire(ctx, cfg.key, owner, cfg.ttl)
			if err != nil {
				return res, err
			}
			if ok {
				break
			}
			if time.Now().After(deadline) {
				return res, errors.New("starved for 30s")
			}
			time.Sleep(50 * time.Microsecond) // the retry delay
		}
		start := time.Now().UnixNano()
		f, err := os.OpenFile(cfg.marker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		inside := err == nil
		if inside {
			_ = f.Close()
		} else if errors.Is(err, fs.ErrExist) {
			res.overlaps++
		} else {
			return res, err
		}
		switch {
		case cfg.overstayEvery > 0 && i%cfg.overstayEvery == 0:
			time.Sleep(2 * cfg.ttl) // let the lease pass while holding
		case i%3 == 1:
			ok, err := d.Extend(ctx, cfg.key, owner, cfg.ttl)
			if err != nil {
				return res, err
			}
			if !ok && cfg.overstayEvery == 0 {
				return res, errors.New("Extend of a live lock returned false")
			}
		}
		if inside {
			if err := os.Remove(cfg.marker); err != nil {
				return res, err
			}
		}
		end := time.Now().UnixNano()
		released, err := d.Release(ctx, cfg.key, owner)
		if err != nil {
			return res, err
		}
		if !released {
			// The lease ran from no earlier than the call, so it
			// lasted at least until called+ttl.
			end = min(end, called.Add(cfg.ttl).UnixNano())
		}
		res.holds = append(res.holds, hold{start, end, released})
	}
	return res, nil
}

// runStress runs goroutines workers (each with its own Open) in this process
// and processes workers in child processes, all on one key, started together,
// and returns every worker's result.
func runStress(t *testing.T, cfg stressConfig, goroutines, processes int) []stressResult {
	dir := t.TempDir()
	cfg.key = "stress/" + t.Name()
	cfg.marker = filepath.Join(dir, "critical-section")
	args := fmt.Sprintf("%d %d %d", cfg.iterations, int64(cfg.ttl), cfg.overstayEvery)
	children := make([]*child, processes)
	for i := range children {
		children[i] = startChild(t, "stress", dir, cfg.key, args)
	}
	for _, c := range children {
		c.expect(t, "ready")
	}
	for _, c := range children {
		if _, err := fmt.Fprintln(c.stdin, "go"); err != nil {
			t.Fatal(err)
		}
	}
	results := make([]stressResult, goroutines, goroutines+processes)
	errs := make([]error, goroutines)
	var wg sync.WaitGroup
	for i := range goroutines {
		d := openDriver(t, dir)
		wg.Go(func() { results[i], errs[i] = stressWorker(testCtx(t), d, cfg) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("goroutine worker %d: %v", i, err)
		}
	}
	for _, c := range children {
		results = append(results, c.parseStress(t))
	}
	wantNoPending(t, dir)
	return results
}

// checkExclusive fails the test if two holds overlap, and counts the holds
// that Release confirmed and those it refused.
func checkExclusive(t *testing.T, results []stressResult) (released, lost int) {
	t.Helper()
	var all []hold
	for _, r := range results {
		all = append(all, r.holds...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start < all[j].start })
	var last hold // the hold that ends latest among those seen so far
	for i, h := range all {
		if h.released {
			released++
		} else {
			lost++
		}
		if i > 0 && last.end >= h.start {
			t.Errorf("hold [%d, %d] overlaps hold [%d, %d]", h.start, h.end, last.start, last.end)
		}
		if i == 0 || h.end > last.end {
			last = h
		}
	}
	return released, lost
}

// TestStressLongLeases hammers one key from 4 goroutines (4 drivers) and 2
// processes with leases that never pass: no two holders ever overlap, and
// every Extend and Release succeeds.
func TestStressLongLeases(t *testing.T) {
	const goroutines, processes, iterations = 4, 2, 40
	results := runStress(t, stressConfig{iterations: iterations, ttl: time.Minute}, goroutines, processes)
	overlaps := 0
	for _, r := range results {
		overlaps += r.overlaps
		if len(r.holds) != iterations {
			t.Errorf("a worker held %d times; want %d", len(r.holds), iterations)
		}
	}
	if overlaps != 0 {
		t.Errorf("%d overlapping critical sections; want 0", overlaps)
	}
	if released, lost := checkExclusive(t, results); lost != 0 {
		t.Errorf("%d of %d Releases returned false with leases that never pass", lost, released+lost)
	}
}

// TestStressShortLeases runs the same with 15ms leases and holders that
// overstay them, so that reclaims race with Extend, Release and each other:
// a Release that returns true must still mean its hold was exclusive.
func TestStressShortLeases(t *testing.T) {
	const goroutines, processes, iterations = 4, 2, 25
	results := runStress(t, stressConfig{iterations: iterations, ttl: 15 * time.Millisecond, overstayEvery: 5}, goroutines, processes)
	released, lost := checkExclusive(t, results)
	if released == 0 || lost == 0 {
		t.Errorf("released %d, lost %d; want some of each (overstaying holders lose their lock)", released, lost)
	}
}
