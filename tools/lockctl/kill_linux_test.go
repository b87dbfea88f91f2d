package main

import (
	"syscall"
	"testing"
)

// A lockctl killed with SIGKILL takes its command with it (the parent-death
// signal), and the drivers that see dead holders free its lock at once, long
// before its TTL.
func TestKilledHolderFreesTheKeyAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flags []string
	}{
		{"sqlite", nil},
		{"file", []string{"--driver", "file", "--dir", "locks"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			flags := append([]string{"--ttl", "1h"}, tc.flags...)
			holder, id, _ := h.startHolder("job", flags...)

			holder.signal(t, syscall.SIGKILL)
			waitUntil(t, "lockctl dies", func() bool { return processGone(holder.cmd.Process.Pid) })
			waitUntil(t, "the command dies with its lockctl", func() bool { return processGone(id.pid) })
			if code := holder.wait(t); code != -1 {
				t.Fatalf("holder exited %d, want death by SIGKILL", code)
			}

			r := h.mustRun(0, append(append([]string{"run", "--key", "job"}, flags...), "--", "true")...)
			if r.stderr != "" {
				t.Errorf("stderr: %s", r.stderr)
			}
		})
	}
}
