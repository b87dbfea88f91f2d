package main

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// cycleResult is what the uncontended benchmark measured for one library.
type cycleResult struct {
	name   string
	role   cyclerRole
	rates  []float64 // cycles per second, one per slice
	ratios []float64 // rate / the baseline's rate in the slice next to it
	cycles int64
	allocs float64 // heap allocations per cycle
	bytes  float64 // heap bytes per cycle
	err    error
}

// rate is the median throughput over the slices.
func (r cycleResult) rate() float64 { return median(r.rates) }

// ratio is the median over the rounds of the throughput relative to the
// baseline's in the slice next to it: pairing each slice with an adjacent
// one of the baseline cancels out a machine whose speed drifts, as a shared
// virtual machine's does from one second to the next.
func (r cycleResult) ratio() float64 { return median(r.ratios) }

// runCycles measures the libraries cs[1:] against the baseline cs[0], rounds
// times: in each round, for each library in a rotating order, a slice of the
// baseline and a slice of the library back to back (which goes first
// alternates), each slice time long. One round, not counted, warms every
// library up.
func runCycles(ctx context.Context, cs []cycler, rounds int, slice time.Duration) []cycleResult {
	results := make([]cycleResult, len(cs))
	for i, c := range cs {
		results[i].name, results[i].role = c.name, c.role
	}
	allocs, bytes := make([]uint64, len(cs)), make([]uint64, len(cs))
	// measure runs one slice of cs[i] and records it unless warming up.
	measure := func(i int, warm bool) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n, elapsed, err := cycleFor(ctx, cs[i], slice)
		runtime.ReadMemStats(&after)
		if err != nil {
			results[i].err = fmt.Errorf("%s: %w", cs[i].name, err)
			return 0
		}
		rate := float64(n) / elapsed.Seconds()
		if !warm {
			results[i].rates = append(results[i].rates, rate)
			results[i].cycles += n
			allocs[i] += after.Mallocs - before.Mallocs
			bytes[i] += after.TotalAlloc - before.TotalAlloc
		}
		return rate
	}
	for round := -1; round < rounds && ctx.Err() == nil; round++ {
		warm := round < 0
		for k := range len(cs) - 1 {
			i := 1 + (k+max(round, 0))%(len(cs)-1)
			if results[i].err != nil || results[0].err != nil {
				continue
			}
			var base, rate float64
			if round%2 == 0 {
				base, rate = measure(0, warm), measure(i, warm)
			} else {
				rate, base = measure(i, warm), measure(0, warm)
			}
			if !warm && base > 0 && rate > 0 {
				results[i].ratios = append(results[i].ratios, rate/base)
			}
		}
	}
	results[0].ratios = []float64{1}
	for i := range results {
		if n := results[i].cycles; n > 0 {
			results[i].allocs = float64(allocs[i]) / float64(n)
			results[i].bytes = float64(bytes[i]) / float64(n)
		}
	}
	return results
}

// cycleFor runs c's cycle until d has passed and returns how many cycles ran
// in how long.
func cycleFor(ctx context.Context, c cycler, d time.Duration) (int64, time.Duration, error) {
	start := time.Now()
	deadline := start.Add(d)
	var n int64
	for {
		// Reading the clock every cycle would be measured too.
		for range 16 {
			if err := c.cycle(ctx); err != nil {
				return n, time.Since(start), err
			}
			n++
		}
		if now := time.Now(); !now.Before(deadline) {
			return n, now.Sub(start), nil
		}
	}
}
