// Command bench compares zerotal lock's Redis driver with the bare go-redis
// pattern and with the Go peers (go-redsync/redsync v4, bsm/redislock), side
// by side in one run against a private redis-server it starts on a free
// loopback port, and prints markdown tables.
//
//	go run ./tools/bench                 # from the repository root
//	go run ./tools/bench -duration 1s -workers 2,8
//
// Two benchmarks, matching the targets of issue 3:
//
//   - uncontended: acquire+release cycles back to back on one connection,
//     the libraries interleaved in short rounds; throughput, its ratio to the
//     bare SET NX PX + EVALSHA compare-and-delete pair in the same round, and
//     heap allocations per cycle;
//   - contention: 2 to 8 workers on one key, each on connections of its own,
//     holding about 1ms and asking again at once; hand-off from a release to
//     the next acquire (in PING round trips measured in the same run), round
//     trips per acquisition (client requests counted by a go-redis hook plus
//     the server's PUBLISH and SUBSCRIBE calls), Jain's fairness index of
//     acquisitions per worker, the longest wait against the workers'
//     combined hold plus 10ms, and overlapping critical sections (an
//     in-process counter and a log of section intervals, independent of
//     Redis), each with PASS or FAIL.
//
// It needs redis-server on PATH (or -redis-server) and fails, saying so,
// without it. The same comparison runs as testing.B benchmarks:
//
//	cd tools/bench && go test -run '^$' -bench . -benchmem
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// options are the command's flags.
type options struct {
	redisServer   string
	duration      time.Duration
	warmup        time.Duration
	hold          time.Duration
	workers       []int
	rounds        int
	roundTime     time.Duration
	barePoll      time.Duration
	redislockPoll time.Duration
	redsyncDelay  time.Duration
	skipCycle     bool
	skipContend   bool
	skipParallel  bool
	instructions  bool
	libs          *regexp.Regexp // the libraries to measure besides the bare pair; nil: all
	parallel      []int
	serverCPU     int // the CPU redis-server is pinned to; -1: not pinned
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// parseFlags parses args into options, reporting problems to errOut.
func parseFlags(args []string, errOut io.Writer) (options, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(errOut)
	var o options
	workers := fs.String("workers", "2,4,8", "worker counts of the contention benchmark, comma-separated")
	parallel := fs.String("goroutines", "1,16", "goroutine counts of the distinct-keys benchmark, comma-separated")
	fs.BoolVar(&o.skipParallel, "no-parallel", false, "skip the distinct-keys benchmark")
	libs := fs.String("libs", "", "only the libraries whose names match this regular expression (the bare pair always runs)")
	fs.BoolVar(&o.instructions, "instructions", false, "count the server's instructions per uncontended cycle under valgrind's callgrind (slow: about a minute)")
	fs.IntVar(&o.serverCPU, "server-cpu", -1, "pin redis-server to this CPU (taskset); run the benchmark itself under taskset to place it")
	fs.StringVar(&o.redisServer, "redis-server", "", "the redis-server binary (default: redis-server on PATH)")
	fs.DurationVar(&o.duration, "duration", 3*time.Second, "measured time of each contention scenario")
	fs.DurationVar(&o.warmup, "warmup", 300*time.Millisecond, "unmeasured time before each contention scenario's window")
	fs.DurationVar(&o.hold, "hold", time.Millisecond, "how long a worker holds the lock")
	fs.IntVar(&o.rounds, "rounds", 40, "rounds of the uncontended benchmark")
	fs.DurationVar(&o.roundTime, "slice", 30*time.Millisecond, "time of each slice of the uncontended benchmark")
	fs.DurationVar(&o.barePoll, "bare-poll", time.Millisecond, "sleep between attempts of the bare SET NX loop")
	fs.DurationVar(&o.redislockPoll, "redislock-backoff", 5*time.Millisecond, "redislock's LinearBackoff")
	fs.DurationVar(&o.redsyncDelay, "redsync-delay", 2*time.Millisecond, "the tuned redsync's retry delay")
	fs.BoolVar(&o.skipCycle, "no-cycle", false, "skip the uncontended benchmark")
	fs.BoolVar(&o.skipContend, "no-contention", false, "skip the contention benchmark")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if *libs != "" {
		re, err := regexp.Compile(*libs)
		if err != nil {
			fmt.Fprintln(errOut, "bench: -libs:", err)
			return o, err
		}
		o.libs = re
	}
	if fs.NArg() > 0 {
		err := fmt.Errorf("unexpected arguments %q", fs.Args())
		fmt.Fprintln(errOut, "bench:", err)
		return o, err
	}
	for _, list := range []struct {
		flag string
		text string
		to   *[]int
	}{{"workers", *workers, &o.workers}, {"goroutines", *parallel, &o.parallel}} {
		for _, w := range strings.Split(list.text, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(w))
			if err != nil || n < 1 {
				err := fmt.Errorf("-%s: %q is not a positive count", list.flag, w)
				fmt.Fprintln(errOut, "bench:", err)
				return o, err
			}
			*list.to = append(*list.to, n)
		}
	}
	if o.rounds < 1 || o.roundTime <= 0 || o.duration <= 0 || o.warmup < 0 || o.hold < 0 {
		err := errors.New("-rounds, -slice, -duration must be positive, -warmup and -hold not negative")
		fmt.Fprintln(errOut, "bench:", err)
		return o, err
	}
	return o, nil
}

// run starts the server, runs the benchmarks o asks for and writes the
// tables to out and progress to log.
func run(ctx context.Context, o options, out, log io.Writer) error {
	s, err := startServer(o.redisServer)
	if err != nil {
		return err
	}
	defer s.stop()
	control := s.newClient(nil)
	defer control.Close()
	version, err := control.InfoMap(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	if o.serverCPU >= 0 {
		if out, err := exec.Command("taskset", "-pc", strconv.Itoa(o.serverCPU), strconv.Itoa(s.PID())).CombinedOutput(); err != nil {
			return fmt.Errorf("pinning redis-server to CPU %d: %v: %s", o.serverCPU, err, out)
		}
	}
	rtt, err := measureRTT(ctx, control, 2000)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# Redis lock benchmark\n\n%s, %s/%s, %d CPUs (GOMAXPROCS %d), redis-server %s on loopback, PING round trip %sµs (median of 2000), %s. "+
		"Placement: the benchmark on CPUs %s, redis-server on CPUs %s.\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.GOMAXPROCS(0),
		version["Server"]["redis_version"], micros(rtt), time.Now().UTC().Format(time.DateOnly),
		cpusAllowed("self"), cpusAllowed(strconv.Itoa(s.PID())))

	if !o.skipCycle {
		fmt.Fprintf(log, "uncontended: %d rounds of %v slices…\n", o.rounds, o.roundTime)
		cs := keep(cyclers(s, "bench:cycle:"), o.libs, func(c cycler) (string, cyclerRole) { return c.name, c.role }, func(c cycler) { c.close() })
		results := runCycles(ctx, cs, o.rounds, o.roundTime)
		for _, c := range cs {
			c.close()
		}
		writeCycleTable(out, o, results)
	}
	if o.instructions {
		results, err := measureInstructions(ctx, o.libs, log)
		if err != nil {
			return err
		}
		writeInstructionsTable(out, results)
	}
	if !o.skipParallel {
		ps := keep(parallelCyclers(s), o.libs, func(p parallelCycler) (string, cyclerRole) { return p.name, p.role }, func(p parallelCycler) { p.close() })
		var all [][]parallelResult
		for _, g := range o.parallel {
			fmt.Fprintf(log, "distinct keys: %d goroutines, %d rounds of %v slices…\n", g, o.rounds, o.roundTime)
			all = append(all, runParallel(ctx, control, ps, g, o.rounds, o.roundTime, "bench:parallel:"))
		}
		for _, p := range ps {
			p.close()
		}
		writeParallelTable(out, o, all)
	}
	if !o.skipContend {
		writeContentionIntro(out, o)
		var rows [][]string
		for _, c := range contenders(o.barePoll, o.redislockPoll, o.redsyncDelay) {
			for _, n := range o.workers {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				fmt.Fprintf(log, "contention: %s, %d workers…\n", c.name, n)
				sc := scenario{hold: o.hold, warmup: o.warmup, measure: o.duration}
				key := fmt.Sprintf("bench:contention:%d:%d", len(rows), n)
				row := runContention(ctx, s, c, n, sc, key)
				rows = append(rows, row.cells())
			}
		}
		writeTable(out, contentionHeader, rows)
	}
	return ctx.Err()
}

// writeCycleTable writes the uncontended results, with the verdicts on the
// driver's targets.
func writeCycleTable(out io.Writer, o options, results []cycleResult) {
	fmt.Fprintf(out, "## Uncontended acquire + release\n\nOne connection per library, cycles back to back, on one key per library. "+
		"%d rounds; in each, every library runs a %v slice right next to a %v slice of the bare pair (which goes first alternates). "+
		"Throughput is the median over the slices; × bare is the median of the ratios of adjacent slices, "+
		"which cancels out the drift of a shared machine's speed.\n\n", o.rounds, o.roundTime, o.roundTime)
	var rows [][]string
	for _, r := range results {
		if r.err != nil {
			rows = append(rows, []string{r.name, "error: " + r.err.Error()})
			continue
		}
		rows = append(rows, []string{
			r.name,
			fmt.Sprintf("%.0f", r.rate()),
			fmt.Sprintf("%.1f", 1e6/r.rate()),
			fmt.Sprintf("%.3f", r.ratio()),
			fmt.Sprintf("%.1f", r.allocs),
			fmt.Sprintf("%.0f", r.bytes),
		})
	}
	writeTable(out, []string{"library", "cycles/s", "µs/cycle", "× bare", "allocs/cycle", "B/cycle"}, rows)
	fmt.Fprint(out, cycleVerdicts(results), "\n\n")
}

// cycleVerdicts states the uncontended targets and whether the driver meets
// them: at least 0.9 × the bare pair, and at least each peer's throughput.
func cycleVerdicts(results []cycleResult) string {
	var driver *cycleResult
	for i := range results {
		if results[i].role == roleDriver && results[i].err == nil {
			driver = &results[i]
		}
	}
	if driver == nil {
		return "Targets: the driver's row failed."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Targets for %s: ≥ 0.9 × bare: %.3f %s", driver.name, driver.ratio(), pass(driver.ratio() >= 0.9))
	for _, r := range results {
		switch {
		case r.err != nil:
		case r.role == rolePeer:
			fmt.Fprintf(&b, "; ≥ %s: %.3f vs %.3f × bare %s", r.name, driver.ratio(), r.ratio(), pass(driver.ratio() >= r.ratio()))
		case r.role == roleFloor:
			fmt.Fprintf(&b, " (the floor of any script-based acquire is %.3f × bare)", r.ratio())
		}
	}
	b.WriteString(".")
	return b.String()
}

// writeContentionIntro says what the contention table measures.
func writeContentionIntro(out io.Writer, o options) {
	fmt.Fprintf(out, "## Contention on one key\n\n"+
		"Each worker has its own go-redis client (its own connections, as a separate process would), takes the key, "+
		"holds it for %v, releases it and asks again at once. %v of warm-up, then %v measured. "+
		"Releaser again: acquisitions by the worker that had just released (no hand-off; the others kept waiting). "+
		"Hand-off: from the moment a holder calls release to the moment the next worker that was already "+
		"waiting gets the key (a releaser that takes it back in between does not end the hand-off), "+
		"in µs and in round trips. The round trip is the median PING of a probe that pings every 2ms during "+
		"the measured window, from a goroutine that parks in between, as a waiter does, on the machine the "+
		"workers keep busy (loaded); the median PING of a tight loop on the idle machine just before is shown too (idle). "+
		"Round trips per acquisition: requests the workers' clients sent (a go-redis hook) plus the PUBLISH and "+
		"(UN)SUBSCRIBE calls the server ran (INFO commandstats), per acquisition; the part in brackets is pub/sub. "+
		"Longest wait: the longest time from asking to holding (or still waiting at the end of the window). "+
		"No starvation means every wait is at most the workers' combined hold time plus %v: the limit of a wait is "+
		"the sum, over the other workers, of the longest hold each had while it waited (measured, so that a hold the "+
		"machine stretched does not count against the lock), plus %v; the wait that exceeds its limit most is shown. "+
		"Overlaps: entries while the in-process counter showed another holder, and intersecting intervals in the "+
		"log of critical sections.\n\n",
		o.hold, o.warmup, o.duration, waitSlack, waitSlack)
}

// writeTable writes a markdown table.
func writeTable(out io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(out, "| %s |\n", strings.Join(header, " | "))
	seps := make([]string, len(header))
	for i := range seps {
		seps[i] = "---"
	}
	fmt.Fprintf(out, "| %s |\n", strings.Join(seps, " | "))
	for _, r := range rows {
		fmt.Fprintf(out, "| %s |\n", strings.Join(r, " | "))
	}
	fmt.Fprintln(out)
}

// cpusAllowed returns the CPUs process pid ("self" for this one) may run on,
// as /proc says (Cpus_allowed_list), or "?" when it cannot be read.
func cpusAllowed(pid string) string {
	status, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return "?"
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

// keep returns the libraries of all that re selects, the bare pair always,
// closing the others; a nil re keeps all.
func keep[T any](all []T, re *regexp.Regexp, name func(T) (string, cyclerRole), close func(T)) []T {
	if re == nil {
		return all
	}
	var out []T
	for _, l := range all {
		if n, role := name(l); role == roleBare || re.MatchString(n) {
			out = append(out, l)
		} else {
			close(l)
		}
	}
	return out
}
