package main

import (
	"fmt"
	"os/exec"
	"strconv"
	"strings"
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

// startTree runs lockctl with a command whose shell starts a background
// sleep, and returns lockctl and the sleep's pid: the command's own child,
// which the parent-death signal does not reach.
func startTree(t *testing.T, h *harness, script string, flags ...string) (*proc, int) {
	t.Helper()
	args := append(append([]string{"run", "--key", "tree"}, flags...), "--", "sh", "-c", script)
	p := h.start(args...)
	line := p.stdout.waitFor(t, "child ")
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "child "))
	if err != nil {
		t.Fatalf("the command said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return p, pid
}

// A lockctl killed with SIGKILL takes the command's whole process tree with
// it, not just the command: its lock is freed at once, and the next run
// must not overlap the previous run's grandchildren.
func TestKilledHolderTakesTheCommandsWholeTree(t *testing.T) {
	h := newHarness(t)
	holder, sleeper := startTree(t, h, `sleep 60 & echo "child $!"; wait`, "--ttl", "1h", "--grace", "1s")
	holder.signal(t, syscall.SIGKILL)
	waitUntil(t, "the command's own child dies with lockctl", func() bool { return processGone(sleeper) })
	h.mustRun(0, "run", "--key", "tree", "--", "true")
}

// A lost lock stops the command's whole tree.
func TestLostLockStopsTheCommandsWholeTree(t *testing.T) {
	h := newHarness(t)
	holder, sleeper := startTree(t, h, `sleep 60 & echo "child $!"; wait`, "--ttl", "3s", "--grace", "1s")
	h.mustRun(0, "release", "--force", "tree") // the next refresh, within a second, finds it gone
	if code := holder.wait(t); code != exitLost {
		t.Fatalf("holder exited %d, want %d; stderr:\n%s", code, exitLost, holder.stderr.text())
	}
	if !processGone(sleeper) {
		t.Fatal("the command's child outlived the lost lock")
	}
}

// When the command exits, what it left running in its process group is
// stopped before the lock is released.
func TestLeftoversAreStoppedBeforeTheRelease(t *testing.T) {
	h := newHarness(t)
	holder, sleeper := startTree(t, h, `sleep 60 & echo "child $!"`, "--grace", "1s")
	if code := holder.wait(t); code != 0 {
		t.Fatalf("lockctl exited %d; stderr:\n%s", code, holder.stderr.text())
	}
	if !processGone(sleeper) {
		t.Fatal("a process the command left running outlived lockctl and its lock")
	}
}

// A command that leaves the process group on purpose (setsid, as daemons
// do) is not stopped: documented, and shown here.
func TestADaemonizingCommandLeavesTheLock(t *testing.T) {
	setsid, err := exec.LookPath("setsid")
	if err != nil {
		t.Fatal("this test needs setsid (apt-get install util-linux)")
	}
	h := newHarness(t)
	// The daemon writes the marker once it has left the group (setsid,
	// not a group leader here, calls setsid(2) and execs sh in the same
	// process); the command ends only after that.
	marker := h.path("left-the-group")
	holder, daemon := startTree(t, h, setsid+` sh -c 'echo > "$0"; exec sleep 60' '`+marker+`' </dev/null >/dev/null 2>&1 & echo "child $!"; while [ ! -e '`+marker+`' ]; do sleep 0.01; done`, "--grace", "1s")
	if code := holder.wait(t); code != 0 {
		t.Fatalf("lockctl exited %d; stderr:\n%s", code, holder.stderr.text())
	}
	if processGone(daemon) {
		t.Fatal("a process that left the group was stopped; the docs say it runs on outside the lock")
	}
}

// The command's group is made, and the guard told of it, before the
// command starts, so a lockctl killed at any moment after the start has a
// guard that knows the group: the command joins a group that is not its
// own. (Before, the command led its group, and lockctl told the guard its
// id only after the start: a lockctl killed in between left the command's
// children running under a freed lock.)
func TestTheCommandsGroupExistsBeforeTheCommand(t *testing.T) {
	h := newHarness(t)
	holder, sleeper := startTree(t, h, `echo "group $(ps -o pgid= -p $$) shell $$"; sleep 60 & echo "child $!"; wait`, "--ttl", "1h", "--grace", "1s")
	line := holder.stdout.waitFor(t, "group ")
	var pgid, shell int
	if _, err := fmt.Sscanf(line, "group %d shell %d", &pgid, &shell); err != nil {
		t.Fatalf("the command said %q: %v", line, err)
	}
	if pgid == shell || pgid == holder.cmd.Process.Pid {
		t.Fatalf("the command runs in group %d (the shell is %d, lockctl %d): want a group made before it", pgid, shell, holder.cmd.Process.Pid)
	}
	holder.signal(t, syscall.SIGKILL)
	waitUntil(t, "the command's own child dies with lockctl", func() bool { return processGone(sleeper) })
}
