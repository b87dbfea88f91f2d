//go:build linux

package sqlite

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/zerotal/lock/driver/process"
)

func TestDeadHolderIsReclaimedBeforeTTL(t *testing.T) {
	d, path := openFile(t)
	ctx := testContext(t)
	cmd := childCommand(t, "hold", childDBEnv+"="+path, childKeyEnv+"=k")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not report its lock: %v", err)
	}
	var childToken uint64
	if _, err := fmt.Sscanf(line, "acquired %d", &childToken); err != nil {
		t.Fatalf("child said %q: %v", line, err)
	}

	h, held, err := d.Inspect(ctx, "k")
	if err != nil || !held || h.PID != cmd.Process.Pid {
		t.Fatalf("Inspect = %+v, %v, %v; want held by the child, pid %d", h, held, err, cmd.Process.Pid)
	}
	waiter := newOwner(t)
	if ok, err := d.Acquire(ctx, "k", waiter, time.Minute); ok || err != nil {
		t.Fatalf("Acquire while the holder lives = %v, %v; want false", ok, err)
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to release
		t.Fatal(err)
	}
	_ = cmd.Wait() // the kill is the expected exit

	start := time.Now()
	token, ok, err := d.AcquireFenced(ctx, "k", waiter, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire after the holder died = %v, %v; want it taken at once, not after the 1h TTL", ok, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("reclaim took %v", took)
	}
	if token <= childToken {
		t.Fatalf("token after reclaim %d; want more than the dead holder's %d", token, childToken)
	}
}

// fakeHolder writes a row for key as if process (pid, start) of scope held it
// for an hour.
func fakeHolder(t *testing.T, d *Driver, key string, pid, start int64, scope string) {
	t.Helper()
	now := time.Now().UnixNano()
	_, err := d.db.Exec(`INSERT INTO zerotal_lock
		(key, owner, token, acquired_ns, expires_ns, pid, pid_start, pid_scope, host)
		VALUES (?, ?, 7, ?, ?, ?, ?, ?, 'fake')`,
		key, newOwner(t), now, now+int64(time.Hour), pid, start, scope)
	if err != nil {
		t.Fatal(err)
	}
}

// exitedPID returns the pid of a child process that has exited and been
// collected.
func exitedPID(t *testing.T) int64 {
	t.Helper()
	cmd := childCommand(t, "none-such-role")
	cmd.Stderr = io.Discard
	_ = cmd.Run() // the child exits 1 on the unknown role
	return int64(cmd.Process.Pid)
}

func TestReclaimChecksPidStartTimeAndScope(t *testing.T) {
	self := process.Self()
	if self.Start == 0 || self.Scope == "" {
		t.Fatalf("no process identity on Linux: start %d, scope %q", self.Start, self.Scope)
	}
	parent := int64(os.Getppid())
	parentStart := int64(process.StartTime(int(parent)))
	if parentStart == 0 {
		t.Fatal("cannot read the parent's start time")
	}
	dead := exitedPID(t)

	cases := []struct {
		name        string
		pid, start  int64
		scope       string
		reclaimable bool
	}{
		{"live pid, matching start", int64(self.PID), int64(self.Start), self.Scope, false},
		{"live parent, matching start", parent, parentStart, self.Scope, false},
		{"live pid reused: start differs", int64(self.PID), int64(self.Start) + 1, self.Scope, true},
		{"live parent reused: start differs", parent, parentStart - 1, self.Scope, true},
		{"exited pid", dead, int64(self.Start), self.Scope, true},
		{"exited pid of another host", dead, int64(self.Start), "another-boot/pid:[1]", false},
		{"exited pid without scope", dead, int64(self.Start), "", false},
		{"exited pid without start time", dead, 0, self.Scope, false},
		{"pid 0", 0, int64(self.Start), self.Scope, false},
		{"negative pid", -1, int64(self.Start), self.Scope, false},
		{"pid out of range", 1 << 40, int64(self.Start), self.Scope, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := openPath(t, MemoryPath)
			ctx := testContext(t)
			fakeHolder(t, d, "k", c.pid, c.start, c.scope)
			held, err := d.Exists(ctx, "k")
			if err != nil || held == c.reclaimable {
				t.Fatalf("Exists = %v, %v; want %v", held, err, !c.reclaimable)
			}
			token, ok, err := d.AcquireFenced(ctx, "k", newOwner(t), time.Minute)
			if err != nil || ok != c.reclaimable {
				t.Fatalf("AcquireFenced = %v, %v; want %v", ok, err, c.reclaimable)
			}
			if ok && token <= 7 {
				t.Fatalf("token after reclaim %d; want above the fake holder's 7", token)
			}
		})
	}
}
