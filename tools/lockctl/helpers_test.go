package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

// patience bounds every wait in these tests. It is generous: the machine is
// shared and noisy, and lockctl is built with the race detector.
const patience = 60 * time.Second

// harness runs lockctl processes for one test, in an environment of its
// own: a private lock database and state directory in t.TempDir(), and none
// of the caller's LOCK_* or REDIS_URL variables, so tests never touch the
// real home directory or each other's locks.
type harness struct {
	t   testing.TB
	dir string
	env []string
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	dir := t.TempDir()
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(name, "LOCK_"), name == "REDIS_URL", name == "XDG_STATE_HOME", name == "HOME", name == "GORACE":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"HOME="+filepath.Join(dir, "home"),
		"XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"LOCK_SQLITE_PATH="+filepath.Join(dir, "locks.db"),
		// A race-enabled binary sleeps a second before exiting, by default;
		// a race it finds still makes it exit 66, which no test expects.
		"GORACE=atexit_sleep_ms=0 "+os.Getenv("GORACE"),
	)
	return &harness{t: t, dir: dir, env: env}
}

// path returns a path inside the harness's directory.
func (h *harness) path(name string) string { return filepath.Join(h.dir, name) }

// proc is a running lockctl.
type proc struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *lines
	stderr *lines
	done   chan struct{} // closed once the process is waited for
	err    error         // Wait's error, once done is closed
}

// startOptions change how start runs lockctl.
type startOptions struct {
	env    []string // added to the harness's environment
	stderr *os.File // lockctl's stderr instead of a pipe (a terminal)
	attr   *syscall.SysProcAttr
}

// start starts lockctl with args. Each lockctl gets a session of its own:
// it has no controlling terminal (so a SIGINT from the test is forwarded as
// from any non-terminal sender) and its own process group, which holds its
// command too, so cleanup kills both even when lockctl was told to leave
// its command behind.
func (h *harness) start(args ...string) *proc {
	return h.startWith(startOptions{}, args...)
}

func (h *harness) startWith(o startOptions, args ...string) *proc {
	h.t.Helper()
	cmd := exec.Command(lockctlBin, args...)
	cmd.Dir = h.dir
	cmd.Env = append(append([]string(nil), h.env...), o.env...)
	cmd.SysProcAttr = o.attr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		h.t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, done: make(chan struct{})}
	var readers sync.WaitGroup
	var parentEnds []*os.File
	p.stdout, parentEnds = pipeLines(h.t, &cmd.Stdout, &readers, parentEnds)
	if o.stderr != nil {
		cmd.Stderr = o.stderr
		p.stderr = newLines()
	} else {
		p.stderr, parentEnds = pipeLines(h.t, &cmd.Stderr, &readers, parentEnds)
	}
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting lockctl: %v", err)
	}
	for _, f := range parentEnds {
		f.Close() // the child has its copies; EOF comes when they close
	}
	go func() {
		// Reads first, then Wait: Wait must not race the readers.
		readers.Wait()
		p.err = cmd.Wait()
		close(p.done)
	}()
	h.t.Cleanup(func() {
		// The whole process group: lockctl and its command.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = stdin.Close()
		select {
		case <-p.done:
		case <-time.After(patience):
			h.t.Errorf("lockctl pid %d did not exit after SIGKILL", cmd.Process.Pid)
		}
	})
	return p
}

// pipeLines connects *w to a pipe whose lines are collected, and returns
// them and the write end to close in the parent once the child started.
func pipeLines(t testing.TB, w *io.Writer, readers *sync.WaitGroup, parentEnds []*os.File) (*lines, []*os.File) {
	t.Helper()
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	*w = pw
	l := newLines()
	readers.Add(1)
	go func() {
		defer readers.Done()
		defer r.Close()
		l.readFrom(r)
	}()
	return l, append(parentEnds, pw)
}

// wait waits for lockctl to exit and returns its exit status (-1 when a
// signal killed it).
func (p *proc) wait(t testing.TB) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(patience):
		t.Fatalf("lockctl %v did not exit within %v; stderr:\n%s", p.cmd.Args[1:], patience, p.stderr.text())
	}
	var ee *exec.ExitError
	if p.err != nil && !errors.As(p.err, &ee) {
		t.Fatalf("waiting for lockctl: %v", p.err)
	}
	return p.cmd.ProcessState.ExitCode()
}

// signal sends sig to lockctl only (not its process group).
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling lockctl: %v", err)
	}
}

// result is what a finished lockctl left.
type result struct {
	code           int
	stdout, stderr string
}

// run runs lockctl with args to the end.
func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runWith(startOptions{}, args...)
}

func (h *harness) runWith(o startOptions, args ...string) result {
	h.t.Helper()
	p := h.startWith(o, args...)
	_ = p.stdin.Close()
	code := p.wait(h.t)
	return result{code: code, stdout: p.stdout.text(), stderr: p.stderr.text()}
}

// mustRun runs lockctl and fails the test unless it exits with want.
func (h *harness) mustRun(want int, args ...string) result {
	h.t.Helper()
	return h.mustRunWith(nil, want, args...)
}

// mustRunWith is mustRun with variables added to the environment.
func (h *harness) mustRunWith(env []string, want int, args ...string) result {
	h.t.Helper()
	r := h.runWith(startOptions{env: env}, args...)
	if r.code != want {
		h.t.Fatalf("lockctl %s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, want, r.stdout, r.stderr)
	}
	return r
}

// status runs `lockctl status --json` on keys and decodes the report.
func (h *harness) status(extra []string, keys ...string) statusReport {
	h.t.Helper()
	return h.statusWith(nil, extra, keys...)
}

// statusWith is status with variables added to the environment.
func (h *harness) statusWith(env, extra []string, keys ...string) statusReport {
	h.t.Helper()
	r := h.mustRunWith(env, 0, append(append([]string{"status", "--json"}, extra...), keys...)...)
	var report statusReport
	if err := json.Unmarshal([]byte(r.stdout), &report); err != nil {
		h.t.Fatalf("status --json printed something that is not its JSON (%v):\n%s", err, r.stdout)
	}
	if len(report.Locks) != len(keys) {
		h.t.Fatalf("status --json reported %d locks for %d keys:\n%s", len(report.Locks), len(keys), r.stdout)
	}
	return report
}

// lines collects the lines of a stream and lets a test wait for one.
type lines struct {
	mu      sync.Mutex
	all     []string
	changed chan struct{} // closed and replaced on every new line
}

func newLines() *lines { return &lines{changed: make(chan struct{})} }

func (l *lines) readFrom(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		l.mu.Lock()
		l.all = append(l.all, sc.Text())
		close(l.changed)
		l.changed = make(chan struct{})
		l.mu.Unlock()
	}
}

// waitFor waits for a line containing substr and returns it.
func (l *lines) waitFor(t testing.TB, substr string) string {
	t.Helper()
	deadline := time.After(patience)
	for {
		l.mu.Lock()
		for _, line := range l.all {
			if strings.Contains(line, substr) {
				l.mu.Unlock()
				return line
			}
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no line containing %q within %v; got:\n%s", substr, patience, l.text())
		}
	}
}

func (l *lines) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.all) == 0 {
		return ""
	}
	return strings.Join(l.all, "\n") + "\n"
}

// script writes an executable sh script into the harness's directory and
// returns its path. Scripts read the paths they need from the environment.
func (h *harness) script(name, body string) string {
	h.t.Helper()
	path := h.path(name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// waitUntil polls cond until it holds, failing the test after patience.
// It is for states no process announces, such as a process being gone.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, patience)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// processGone reports whether pid has exited: no such process, or a zombie
// (dead, waiting for a parent to collect it).
func processGone(pid int) bool {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		// No procfs: kill(pid, 0) cannot tell a zombie from a live process,
		// but says whether the pid exists at all.
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name, which may itself
	// contain parentheses.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z' || s[i+2] == 'X'
}

// readFile returns the contents of a file the test expects to exist.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// driverHolder is a holder on host.
func driverHolder(host string) driver.Holder { return driver.Holder{PID: 1, Host: host} }
