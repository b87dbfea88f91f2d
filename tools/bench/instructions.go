package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/zerotal/lock/drivers/redis/redistest"
)

// The instruction counts: the server work of one uncontended cycle of each
// library, counted by valgrind's callgrind in a redis-server of its own.
// Unlike times, they do not depend on what else the machine runs, so they
// are the measure of the work a lock costs the one thread of a Redis (or of
// one cluster shard) that every client of a deployment shares. Each library
// runs twice, few and many cycles, on fresh servers: the difference divided
// by the difference in cycles leaves out the server's start and shutdown.
const (
	fewCycles  = 200
	manyCycles = 1200
)

// instructionsResult is one library's count.
type instructionsResult struct {
	name     string
	role     cyclerRole
	perCycle float64
	err      error
}

// measureInstructions counts the server instructions per cycle of every
// library of the uncontended benchmark.
func measureInstructions(ctx context.Context, only *regexp.Regexp, log io.Writer) ([]instructionsResult, error) {
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		return nil, fmt.Errorf("valgrind not found: counting the server's instructions needs it (Debian/Ubuntu: apt-get install valgrind)")
	}
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, redistest.ErrNoServer
	}
	var names []cycler
	probe, err := startServer("")
	if err != nil {
		return nil, err
	}
	names = cyclers(probe, "probe:")
	for _, c := range names {
		c.close()
	}
	probe.stop()

	var results []instructionsResult
	for i, c := range names {
		if only != nil && c.role != roleBare && !only.MatchString(c.name) {
			continue
		}
		fmt.Fprintf(log, "instructions: %s…\n", c.name)
		r := instructionsResult{name: c.name, role: c.role}
		var counts [2]int64
		for j, n := range []int{fewCycles, manyCycles} {
			counts[j], err = countInstructions(ctx, valgrind, redisServer, i, n)
			if err != nil {
				r.err = err
				break
			}
		}
		if r.err == nil {
			r.perCycle = float64(counts[1]-counts[0]) / float64(manyCycles-fewCycles)
		}
		results = append(results, r)
	}
	return results, nil
}

// countInstructions runs n cycles of the library at index i of cyclers on a
// redis-server under callgrind and returns the instructions it executed.
func countInstructions(ctx context.Context, valgrind, redisServer string, i, n int) (int64, error) {
	dir, err := os.MkdirTemp("", "zerotal-bench-callgrind-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "callgrind.out")
	wrapper := filepath.Join(dir, "redis-server")
	script := fmt.Sprintf("#!/bin/sh\nexec %q --tool=callgrind --callgrind-out-file=%q %q \"$@\"\n", valgrind, out, redisServer)
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		return 0, err
	}
	rs, err := redistest.StartBinary(wrapper, dir)
	if err != nil {
		return 0, err
	}
	s := &server{Server: rs, dir: dir}
	cs := cyclers(s, "bench:instructions:")
	for j, c := range cs {
		if j == i {
			for range n {
				if err := c.cycle(ctx); err != nil {
					err = fmt.Errorf("%s: %w", c.name, err)
					for _, c := range cs {
						c.close()
					}
					rs.Kill()
					return 0, err
				}
			}
		}
	}
	for _, c := range cs {
		c.close()
	}
	rs.Stop()
	b, err := os.ReadFile(out)
	if err != nil {
		return 0, fmt.Errorf("callgrind wrote no profile: %w", err)
	}
	m := regexp.MustCompile(`(?m)^(?:summary|totals): (\d+)`).FindSubmatch(b)
	if m == nil {
		return 0, fmt.Errorf("no instruction total in callgrind's profile")
	}
	return strconv.ParseInt(string(m[1]), 10, 64)
}

// writeInstructionsTable writes the counts, with their ratio to the bare
// pair's and the verdict on the target of at most 2 ×.
func writeInstructionsTable(out io.Writer, results []instructionsResult) {
	fmt.Fprintf(out, "## Server work per uncontended cycle\n\n"+
		"Instructions redis-server executes per acquire + release, counted by valgrind's callgrind: "+
		"(instructions for %d cycles − instructions for %d cycles) / %d, each on a fresh server, so the server's "+
		"start and shutdown cancel out. Redis runs commands on one thread: this is what caps how many locks per "+
		"second one server (or one cluster shard) serves for all its clients.\n\n", manyCycles, fewCycles, manyCycles-fewCycles)
	var bare float64
	for _, r := range results {
		if r.role == roleBare && r.err == nil {
			bare = r.perCycle
		}
	}
	var rows [][]string
	verdict := ""
	for _, r := range results {
		if r.err != nil {
			rows = append(rows, []string{r.name, "error: " + r.err.Error(), ""})
			continue
		}
		ratio := r.perCycle / bare
		rows = append(rows, []string{r.name, fmt.Sprintf("%.0f", r.perCycle), fmt.Sprintf("%.2f", ratio)})
		if r.role == roleDriver {
			verdict = fmt.Sprintf("Target for %s: ≤ 2 × bare: %.2f %s.", r.name, ratio, pass(ratio <= 2))
		}
	}
	writeTable(out, []string{"library", "instructions/cycle", "× bare"}, rows)
	fmt.Fprint(out, verdict, "\n\n")
}
