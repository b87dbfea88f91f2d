package main

import (
	"os/exec"
	"testing"
)

// The cost of a whole `lockctl run -- true` as a user sees it: process
// start, opening the SQLite file, the first lookup, acquire, the command,
// release. BenchmarkBareCommand is the floor: the same command without
// lockctl. Run without -race: TestMain builds a race-enabled lockctl for
// race-enabled test binaries.
func BenchmarkRun(b *testing.B) {
	h := newHarness(b)
	benchmarkCommand(b, h.env, lockctlBin, "run", "--key", "bench", "--", "true")
}

func BenchmarkStatus(b *testing.B) {
	h := newHarness(b)
	benchmarkCommand(b, h.env, lockctlBin, "status", "bench")
}

func BenchmarkBareCommand(b *testing.B) {
	benchmarkCommand(b, nil, "true")
}

func benchmarkCommand(b *testing.B, env []string, name string, args ...string) {
	for b.Loop() {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
}
