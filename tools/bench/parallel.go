package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// parallelCycler is one library of the distinct-keys benchmark: many
// goroutines of one service, each locking a key of its own through one
// client shared by all of them (a service's one pool), as request handlers
// locking their own invoice or job do. newWorker returns the cycle of one
// goroutine on its key.
type parallelCycler struct {
	name      string
	role      cyclerRole
	newWorker func(key string) func(ctx context.Context) error
	close     func()
}

// parallelResult is what the distinct-keys benchmark measured for one
// library at one goroutine count.
type parallelResult struct {
	name    string
	role    cyclerRole
	workers int
	rates   []float64 // cycles per second, one per slice
	ratios  []float64 // rate / the baseline's rate in the slice next to it
	cost    costs     // summed over the measured slices
	err     error
}

// costs are the resources a run of cycles used, to divide by its cycles.
type costs struct {
	cycles       int64
	allocs       uint64        // heap allocations of this process
	clientCPU    time.Duration // user+system CPU of this process
	serverCPU    time.Duration // user+system CPU of redis-server (INFO cpu)
	serverReads  int64         // read events the server processed (INFO stats): requests, batched or not
	serverUsecCS float64       // µs the server spent in top-level commands (INFO commandstats, scripts' inner calls excluded)
}

func (c *costs) add(o costs) {
	c.cycles += o.cycles
	c.allocs += o.allocs
	c.clientCPU += o.clientCPU
	c.serverCPU += o.serverCPU
	c.serverReads += o.serverReads
	c.serverUsecCS += o.serverUsecCS
}

func (c costs) per(v float64) float64 {
	if c.cycles == 0 {
		return 0
	}
	return v / float64(c.cycles)
}

// serverSample is the server's counters at one moment.
type serverSample struct {
	cpu   time.Duration
	reads int64
	usec  map[string]float64 // INFO commandstats usec by command
}

// sampleServer reads the counters costs need from the server.
func sampleServer(ctx context.Context, c *redis.Client) (serverSample, error) {
	info, err := c.Info(ctx, "cpu", "stats", "commandstats").Result()
	if err != nil {
		return serverSample{}, fmt.Errorf("INFO: %w", err)
	}
	s := serverSample{usec: map[string]float64{}}
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		switch name {
		case "used_cpu_user", "used_cpu_sys":
			f, _ := strconv.ParseFloat(value, 64)
			s.cpu += time.Duration(f * float64(time.Second))
		case "total_reads_processed":
			s.reads, _ = strconv.ParseInt(value, 10, 64)
		}
		if cmd, ok := strings.CutPrefix(name, "cmdstat_"); ok {
			for _, kv := range strings.Split(value, ",") {
				if u, ok := strings.CutPrefix(kv, "usec="); ok {
					s.usec[cmd], _ = strconv.ParseFloat(u, 64)
				}
			}
		}
	}
	return s, nil
}

// topLevelUsec is the server time of the commands clients sent, from two
// samples: a script's own calls are counted inside the script's time too,
// so only the script commands and the commands a lock can send outside a
// script count. The INFO calls of the sampling are left out.
func topLevelUsec(before, after serverSample) float64 {
	var u float64
	for _, name := range []string{"eval", "evalsha", "evalsha_ro", "eval_ro", "fcall", "fcall_ro", "set", "del", "pexpire", "get"} {
		u += after.usec[name] - before.usec[name]
	}
	return u
}

// processCPU is this process's user+system CPU so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// runParallel measures the libraries ps[1:] against the baseline ps[0] with
// workers goroutines each, rounds times, in adjacent slices as runCycles
// does. Only a library whose scripts the baseline does not share runs
// commands that topLevelUsec counts twice (a script calling SET): that is
// why the baseline is the bare pair, whose SET is a top-level command.
func runParallel(ctx context.Context, control *redis.Client, ps []parallelCycler, workers, rounds int, slice time.Duration, prefix string) []parallelResult {
	results := make([]parallelResult, len(ps))
	cycles := make([][]func(context.Context) error, len(ps))
	for i, p := range ps {
		results[i].name, results[i].role, results[i].workers = p.name, p.role, workers
		for w := range workers {
			cycles[i] = append(cycles[i], p.newWorker(fmt.Sprintf("%s%d:%d:%d", prefix, workers, i, w)))
		}
	}
	measure := func(i int, warm bool) float64 {
		if results[i].err != nil {
			return 0
		}
		var ms0, ms1 runtime.MemStats
		before, err := sampleServer(ctx, control)
		if err != nil {
			results[i].err = err
			return 0
		}
		runtime.ReadMemStats(&ms0)
		cpu0 := processCPU()
		n, elapsed, err := runWorkers(ctx, cycles[i], slice)
		cpu1 := processCPU()
		runtime.ReadMemStats(&ms1)
		after, serr := sampleServer(ctx, control)
		if err == nil {
			err = serr
		}
		if err != nil {
			results[i].err = fmt.Errorf("%s: %w", ps[i].name, err)
			return 0
		}
		rate := float64(n) / elapsed.Seconds()
		if !warm {
			results[i].rates = append(results[i].rates, rate)
			// The sampling's own INFO calls are two reads.
			results[i].cost.add(costs{
				cycles:       n,
				allocs:       ms1.Mallocs - ms0.Mallocs,
				clientCPU:    cpu1 - cpu0,
				serverCPU:    after.cpu - before.cpu,
				serverReads:  after.reads - before.reads - 1,
				serverUsecCS: topLevelUsec(before, after),
			})
		}
		return rate
	}
	for round := -1; round < rounds && ctx.Err() == nil; round++ {
		warm := round < 0
		for k := range len(ps) - 1 {
			i := 1 + (k+max(round, 0))%(len(ps)-1)
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
	return results
}

// runWorkers runs every cycle in a goroutine of its own until d has passed
// and returns how many cycles ran in all, in how long.
func runWorkers(ctx context.Context, cycles []func(context.Context) error, d time.Duration) (int64, time.Duration, error) {
	var wg sync.WaitGroup
	counts := make([]int64, len(cycles))
	errs := make([]error, len(cycles))
	start := time.Now()
	deadline := start.Add(d)
	for w, cycle := range cycles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				for range 8 {
					if err := cycle(ctx); err != nil {
						errs[w] = err
						return
					}
					counts[w]++
				}
				if !time.Now().Before(deadline) {
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	var n int64
	for w := range cycles {
		n += counts[w]
		if errs[w] != nil {
			return n, elapsed, errs[w]
		}
	}
	return n, elapsed, nil
}

// writeParallelTable writes the distinct-keys results for every goroutine
// count, with the verdicts on the targets.
func writeParallelTable(out io.Writer, o options, all [][]parallelResult) {
	fmt.Fprintf(out, "## Many goroutines, a key each\n\n"+
		"G goroutines of one process, each acquiring and releasing a key of its own back to back, every library "+
		"through one client (one connection pool) shared by its goroutines, as one service's handlers would. "+
		"%d rounds of %v slices, each library's slice next to one of the bare pair; × bare is the median of the "+
		"ratios of adjacent slices. Per cycle: heap allocations, this process's CPU, redis-server's CPU (INFO cpu), "+
		"the server's read events (INFO stats total_reads_processed: one per request or batch of requests it read, "+
		"the round trips that cap a server), and the server's time in the commands clients sent (INFO commandstats; "+
		"a script's own calls counted once, inside the script).\n\n", o.rounds, o.roundTime)
	var rows [][]string
	for _, results := range all {
		for _, r := range results {
			if r.err != nil {
				rows = append(rows, []string{strconv.Itoa(r.workers), r.name, "error: " + r.err.Error()})
				continue
			}
			c := r.cost
			rows = append(rows, []string{
				strconv.Itoa(r.workers),
				r.name,
				fmt.Sprintf("%.0f", median(r.rates)),
				fmt.Sprintf("%.3f", median(r.ratios)),
				fmt.Sprintf("%.1f", c.per(float64(c.allocs))),
				fmt.Sprintf("%.1f", c.per(float64(c.clientCPU.Microseconds()))),
				fmt.Sprintf("%.1f", c.per(float64(c.serverCPU.Microseconds()))),
				fmt.Sprintf("%.2f", c.per(float64(c.serverReads))),
				fmt.Sprintf("%.2f", c.per(c.serverUsecCS)),
			})
		}
	}
	writeTable(out, []string{"G", "library", "cycles/s", "× bare", "allocs/cycle", "client CPU µs/cycle", "server CPU µs/cycle", "server reads/cycle", "server command µs/cycle"}, rows)
	for _, results := range all {
		fmt.Fprintln(out, parallelVerdicts(results))
	}
	fmt.Fprintln(out)
}

// parallelVerdicts states the targets for one goroutine count: with many
// goroutines at least 1.1 × bare, alone at least 0.95 × bare, and ahead of
// every peer either way.
func parallelVerdicts(results []parallelResult) string {
	var driver *parallelResult
	for i := range results {
		if results[i].role == roleDriver && results[i].err == nil {
			driver = &results[i]
		}
	}
	if driver == nil {
		return "Targets: the driver's row failed."
	}
	target := 1.1
	if driver.workers == 1 {
		target = 0.95
	}
	ratio := median(driver.ratios)
	var b strings.Builder
	fmt.Fprintf(&b, "- G = %d, targets for %s: ≥ %.2f × bare: %.3f %s", driver.workers, driver.name, target, ratio, pass(ratio >= target))
	for _, r := range results {
		if r.err == nil && r.role == rolePeer {
			fmt.Fprintf(&b, "; ahead of %s (%.3f) %s", r.name, median(r.ratios), pass(ratio > median(r.ratios)))
		}
	}
	b.WriteString(".")
	return b.String()
}
