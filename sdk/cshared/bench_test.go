package main

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	lock "github.com/zerotal/lock/sdk/go"
)

// BenchmarkCycle compares one uncontended cycle on the memory driver
// through the Go API (in this process) and through the C ABI (ctest/bench.c,
// timed inside the C program, whose mean replaces ns/op):
//
//   - acquire: Acquire + Release on one handle; zl_acquire + zl_release;
//   - try: Try with an empty function; zl_try with an empty callback.
//
// The C ABI's target is at most 2µs more than Go per cycle.
//
//	go test -run '^$' -bench Cycle ./sdk/cshared
func BenchmarkCycle(b *testing.B) {
	for _, mode := range []string{"acquire", "try"} {
		b.Run(mode+"/go", func(b *testing.B) { goCycle(b, mode) })
		b.Run(mode+"/c", func(b *testing.B) { cCycle(b, mode) })
	}
}

func goCycle(b *testing.B, mode string) {
	m, err := lock.Open(lock.Config{Driver: "memory"})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	l := m.Make("bench", time.Minute)
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if mode == "try" {
			if err := m.Try(ctx, "bench", time.Minute, fn); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			b.Fatal(ok, err)
		}
		if err := l.Release(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func cCycle(b *testing.B, mode string) {
	exe := compileC(b, "bench", "ctest/bench.c")
	b.ReportMetric(runBench(b, exe, mode, b.N), "ns/op")
}

// runBench runs the compiled ctest/bench.c for n cycles and returns its
// mean, in nanoseconds.
func runBench(tb testing.TB, exe, mode string, n int) float64 {
	tb.Helper()
	out, err := exec.Command(exe, mode, strconv.Itoa(n)).Output()
	if err != nil {
		tb.Fatalf("bench %s %d: %v", mode, n, err)
	}
	ns, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil || ns <= 0 {
		tb.Fatalf("bench printed %q: %v", out, err)
	}
	return ns
}

// TestBenchProgram keeps the benchmark's C program working: it builds and
// times a few cycles of each kind.
func TestBenchProgram(t *testing.T) {
	exe := compileC(t, "bench", "ctest/bench.c")
	for _, mode := range []string{"acquire", "try"} {
		t.Logf("%s: %.0f ns per cycle over 1000 cycles", mode, runBench(t, exe, mode, 1000))
	}
}
