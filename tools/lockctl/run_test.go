package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// holdScript holds the lock until the test closes lockctl's stdin, which the
// command reads: it prints its identity and "ready" once it runs, so tests
// synchronise on its output, not on sleeps.
const holdScript = `echo "owner=$LOCK_OWNER token=$LOCK_TOKEN key=$LOCK_KEY pid=$$"
echo ready
read line || :
`

var identityLine = regexp.MustCompile(`^owner=([0-9a-f]{32}) token=(\d+) key=(.*) pid=(\d+)$`)

// identity is what a holdScript command printed about its lock.
type identity struct {
	owner string
	token uint64
	key   string
	pid   int
}

// startHolder starts a lockctl that holds key until release is called.
func (h *harness) startHolder(key string, flags ...string) (p *proc, id identity, release func()) {
	h.t.Helper()
	args := append(append([]string{"run", "--key", key}, flags...), "--", "sh", "-c", holdScript)
	p = h.start(args...)
	line := p.stdout.waitFor(h.t, "owner=")
	m := identityLine.FindStringSubmatch(line)
	if m == nil {
		h.t.Fatalf("holder printed %q, want owner=<32 hex> token=<n> key=<key> pid=<n>", line)
	}
	id.owner, id.key = m[1], m[3]
	id.token, _ = strconv.ParseUint(m[2], 10, 64)
	id.pid, _ = strconv.Atoi(m[4])
	p.stdout.waitFor(h.t, "ready")
	return p, id, func() { _ = p.stdin.Close() }
}

func TestRunGivesTheCommandItsLockAndExitStatus(t *testing.T) {
	h := newHarness(t)
	r := h.mustRun(3, "run", "--key", "report", "--", "sh", "-c", holdScript+"exit 3")
	m := identityLine.FindStringSubmatch(strings.SplitN(r.stdout, "\n", 2)[0])
	if m == nil {
		t.Fatalf("command printed %q, want LOCK_OWNER (32 hex digits), LOCK_TOKEN and LOCK_KEY", r.stdout)
	}
	if m[3] != "report" {
		t.Errorf("LOCK_KEY = %q, want report", m[3])
	}
	first, _ := strconv.ParseUint(m[2], 10, 64)
	if first == 0 {
		t.Errorf("LOCK_TOKEN = %s on the sqlite driver, want a fencing token > 0", m[2])
	}
	if r.stderr != "" {
		t.Errorf("a successful run wrote to stderr:\n%s", r.stderr)
	}

	// The lock was released: the next run gets it, with a later token.
	r = h.mustRun(0, "run", "--key", "report", "--", "sh", "-c", `echo "$LOCK_TOKEN"`)
	second, _ := strconv.ParseUint(strings.TrimSpace(r.stdout), 10, 64)
	if second <= first {
		t.Errorf("second run's token %d, want more than the first's %d", second, first)
	}
}

func TestRunReportsACommandKilledBySignalAsAShellDoes(t *testing.T) {
	h := newHarness(t)
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGTERM} {
		r := h.run("run", "--key", "k", "--", "sh", "-c", "kill -"+strconv.Itoa(int(sig))+" $$")
		if want := 128 + int(sig); r.code != want {
			t.Errorf("command killed by signal %d: exit %d, want %d; stderr: %s", sig, r.code, want, r.stderr)
		}
	}
	if s := h.status(nil, "k"); s.Locks[0].Held {
		t.Errorf("key still held after the commands died: %+v", s.Locks[0])
	}
}

func TestRunCommandThatCannotRun(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--key", "k", "--", "no-such-command-lockctl-test")
	if r.code != exitNotFound || !strings.Contains(r.stderr, "command not found") {
		t.Errorf("missing command: exit %d, stderr %q; want %d and 'command not found'", r.code, r.stderr, exitNotFound)
	}
	notExecutable := h.script("plain", "")
	if err := os.Chmod(notExecutable, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := h.run("run", "--key", "k", "--", notExecutable); r.code != exitNoExec {
		t.Errorf("command without execute permission: exit %d, want %d; stderr %q", r.code, exitNoExec, r.stderr)
	}
}

func TestSecondRunFailsAtOnceWithBusy(t *testing.T) {
	h := newHarness(t)
	holder, _, release := h.startHolder("nightly")

	start := time.Now()
	r := h.run("run", "--key", "nightly", "--", "sh", "-c", "echo ran")
	if r.code != exitBusy {
		t.Fatalf("second run on a held key: exit %d, want %d; stderr: %s", r.code, exitBusy, r.stderr)
	}
	if strings.Contains(r.stdout, "ran") {
		t.Error("the second command ran although the key was held")
	}
	want := "held by pid " + strconv.Itoa(holder.cmd.Process.Pid)
	if !strings.Contains(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("busy message %q, want one line naming the holder (%q)", r.stderr, want)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("--wait 0 took %v to give up", took)
	}

	release()
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder exited %d, want 0", code)
	}
	h.mustRun(0, "run", "--key", "nightly", "--", "true")
}

func TestSecondRunWaitsForTheFirst(t *testing.T) {
	h := newHarness(t)
	log := h.path("log")
	env := []string{"LOG=" + log}
	first := h.startWith(startOptions{env: env}, "run", "--key", "deploy", "--",
		"sh", "-c", `echo start1 >> "$LOG"; echo ready; read line; echo end1 >> "$LOG"`)
	first.stdout.waitFor(t, "ready")

	second := h.startWith(startOptions{env: env}, "run", "--key", "deploy", "--wait", "5m", "--verbose", "--",
		"sh", "-c", `echo start2 >> "$LOG"`)
	waiting := second.stderr.waitFor(t, "waiting up to")
	if want := "held by pid " + strconv.Itoa(first.cmd.Process.Pid); !strings.Contains(waiting, want) {
		t.Errorf("waiting message %q does not name the holder (%q)", waiting, want)
	}

	_ = first.stdin.Close()
	if code := first.wait(t); code != 0 {
		t.Fatalf("first run exited %d", code)
	}
	if code := second.wait(t); code != 0 {
		t.Fatalf("second run exited %d, want 0; stderr:\n%s", code, second.stderr.text())
	}
	if got, want := readFile(t, log), "start1\nend1\nstart2\n"; got != want {
		t.Errorf("the commands ran as\n%s\nwant one after the other:\n%s", got, want)
	}
	second.stderr.waitFor(t, "acquired")
	second.stderr.waitFor(t, "released")
}

func TestWaitRunsOut(t *testing.T) {
	h := newHarness(t)
	_, _, release := h.startHolder("k")
	defer release()
	start := time.Now()
	r := h.run("run", "--key", "k", "--wait", "300ms", "--", "sh", "-c", "echo ran")
	took := time.Since(start)
	if r.code != exitBusy {
		t.Fatalf("exit %d, want %d; stderr: %s", r.code, exitBusy, r.stderr)
	}
	if took < 300*time.Millisecond {
		t.Errorf("gave up after %v, before --wait 300ms", took)
	}
	if r.stdout != "" {
		t.Errorf("the command ran: %q", r.stdout)
	}
	// Not a terminal: no live line, just the one-line verdict.
	if !strings.Contains(r.stderr, "gave up after waiting") || strings.Contains(r.stderr, "\r") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line saying it gave up, and no live line", r.stderr)
	}
}

func TestSignalsReachTheCommand(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		t.Run(signalName(sig), func(t *testing.T) {
			h := newHarness(t)
			marker := h.path("marker")
			// The command records the signal it got, and exits 42.
			cmd := h.script("trap.sh", `trap 'echo TERM > "$M"; kill $pid; exit 42' TERM
trap 'echo INT > "$M"; kill $pid; exit 42' INT
trap 'echo HUP > "$M"; kill $pid; exit 42' HUP
sleep 1000 & pid=$!
echo ready
while kill -0 $pid 2>/dev/null; do wait $pid; done
`)
			p := h.startWith(startOptions{env: []string{"M=" + marker}}, "run", "--key", "k", "--", cmd)
			p.stdout.waitFor(t, "ready")
			p.signal(t, sig)
			if code := p.wait(t); code != 42 {
				t.Fatalf("exit %d, want the command's 42; stderr:\n%s", code, p.stderr.text())
			}
			if got, want := strings.TrimSpace(readFile(t, marker)), strings.TrimPrefix(signalName(sig), "SIG"); got != want {
				t.Errorf("command got %s, want %s", got, want)
			}
			if s := h.status(nil, "k"); s.Locks[0].Held {
				t.Errorf("key still held after lockctl exited: %+v", s.Locks[0])
			}
		})
	}
}

func TestSignalWhileWaitingEndsTheWait(t *testing.T) {
	h := newHarness(t)
	_, _, release := h.startHolder("k")
	defer release()
	marker := h.path("ran")
	waiter := h.startWith(startOptions{env: []string{"M=" + marker}}, "run", "--key", "k", "--wait", "5m", "--verbose", "--",
		"sh", "-c", `touch "$M"`)
	waiter.stderr.waitFor(t, "waiting up to")
	waiter.signal(t, syscall.SIGTERM)
	if code := waiter.wait(t); code != 128+int(syscall.SIGTERM) {
		t.Fatalf("exit %d, want %d", code, 128+int(syscall.SIGTERM))
	}
	waiter.stderr.waitFor(t, "interrupted by SIGTERM while waiting")
	if fileExists(marker) {
		t.Error("the command ran although the wait was interrupted")
	}
}

func TestLostLockStopsTheCommand(t *testing.T) {
	t.Run("SIGTERM", func(t *testing.T) {
		h := newHarness(t)
		marker := h.path("marker")
		cmd := h.script("trap.sh", `trap 'echo TERM > "$M"; kill $pid; exit 0' TERM
sleep 1000 & pid=$!
echo ready
while kill -0 $pid 2>/dev/null; do wait $pid; done
`)
		p := h.startWith(startOptions{env: []string{"M=" + marker}}, "run", "--key", "k", "--ttl", "3s", "--", cmd)
		p.stdout.waitFor(t, "ready")
		r := h.mustRun(0, "release", "--force", "k")
		if want := "was held by pid " + strconv.Itoa(p.cmd.Process.Pid); !strings.Contains(r.stdout, want) {
			t.Errorf("release said %q, want %q", r.stdout, want)
		}
		// The holder notices at its next refresh, a third of the TTL later.
		if code := p.wait(t); code != exitLost {
			t.Fatalf("exit %d, want %d (lost) even though the command exited 0; stderr:\n%s", code, exitLost, p.stderr.text())
		}
		if got := strings.TrimSpace(readFile(t, marker)); got != "TERM" {
			t.Errorf("command got %q, want TERM", got)
		}
		// Why: the reason the engine reports, not just "lost".
		p.stderr.waitFor(t, "lost the lock on \"k\": the backend no longer had it")
	})
	t.Run("SIGKILL after grace", func(t *testing.T) {
		h := newHarness(t)
		p := h.start("run", "--key", "k", "--ttl", "3s", "--grace", "200ms", "--",
			"sh", "-c", `trap "" TERM; echo $$; echo ready; exec sleep 1000`)
		pid, err := strconv.Atoi(p.stdout.waitFor(t, ""))
		if err != nil {
			t.Fatal(err)
		}
		p.stdout.waitFor(t, "ready")
		h.mustRun(0, "release", "--force", "k")
		if code := p.wait(t); code != exitLost {
			t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitLost, p.stderr.text())
		}
		p.stderr.waitFor(t, "sending SIGKILL")
		if !processGone(pid) {
			t.Errorf("the command (pid %d) outlived lockctl", pid)
		}
	})
}

// A signal ignored when lockctl starts (nohup, a background job of a
// script) stays ignored for the command: lockctl must not catch it, which
// would reset it to its default action in the command.
func TestIgnoredSignalStaysIgnoredForTheCommand(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", `trap "" HUP; exec "$0" "$@"`,
		lockctlBin, "run", "--key", "k", "--", "sh", "-c", `kill -HUP $$; echo survived`)
	cmd.Env = h.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "survived\n" {
		t.Errorf("command under nohup-like lockctl: %v, output %q; want it to survive SIGHUP", err, out)
	}
}
