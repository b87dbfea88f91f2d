package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The cron recipes of docs/lockctl.md: a skipped run says nothing with
// --quiet, and its status is the one --busy-exit chose.
func TestBusyRunsForCron(t *testing.T) {
	h := newHarness(t)
	_, _, release := h.startHolder("nightly")
	defer release()
	for _, tc := range []struct {
		name   string
		flags  []string
		code   int
		silent bool
	}{
		{"default", nil, exitBusy, false},
		{"quiet", []string{"--quiet"}, exitBusy, true},
		{"quiet after a wait", []string{"--quiet", "--wait", "0.2"}, exitBusy, true},
		{"busy exit 0", []string{"--quiet", "--busy-exit", "0"}, 0, true},
		{"busy exit 1 as flock", []string{"--busy-exit", "1"}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.mustRun(tc.code, append(append([]string{"run", "--key", "nightly"}, tc.flags...), "--", "echo", "ran")...)
			if r.stdout != "" {
				t.Errorf("the command ran although the key is held: %q", r.stdout)
			}
			switch {
			case tc.silent && r.stderr != "":
				t.Errorf("--quiet printed %q", r.stderr)
			case !tc.silent && !strings.Contains(r.stderr, `"nightly" is held by pid`):
				t.Errorf("stderr %q does not say who holds the key", r.stderr)
			}
		})
	}
	// --quiet silences only contention: a failure still says what failed.
	r := h.run("run", "--quiet", "--key", "nightly", "--sqlite-path", h.path("missing/x.db"), "--", "true")
	checkOneLineError(t, r, exitConfig, "no such file or directory")
}

// --wait takes bare seconds, as flock -w does: 1 is a second, not a
// nanosecond. (The bound only has to tell the two apart.)
func TestWaitTakesBareSeconds(t *testing.T) {
	h := newHarness(t)
	_, _, release := h.startHolder("k")
	defer release()
	start := time.Now()
	r := h.mustRun(exitBusy, "run", "--key", "k", "--wait", "1", "--", "true")
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("--wait 1 gave up after %v; stderr %q", waited, r.stderr)
	}
	if !strings.Contains(r.stderr, "gave up after waiting 1") {
		t.Errorf("stderr %q does not say how long it waited", r.stderr)
	}
}

func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"60": time.Minute, "2.5": 2500 * time.Millisecond, "0": 0, "90s": 90 * time.Second,
		"1h30m": 90 * time.Minute, "500ms": 500 * time.Millisecond, "-1s": -time.Second,
	} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("parseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "soon", "1e3", "0x10", "+5", "9223372037", "1.5.2", " 5"} {
		if got, err := parseDuration(in); err == nil {
			t.Errorf("parseDuration(%q) = %v, want an error", in, got)
		}
	}
}

// A store lockctl cannot write is a configuration error that names the
// path, whoever runs lockctl: as root, the test runs lockctl as nobody,
// since permissions do not stop root.
func TestReadOnlyStoreIsAConfigurationError(t *testing.T) {
	h := newHarness(t)
	dir := h.path("shared")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "locks.db")
	h.mustRun(0, "run", "--sqlite-path", db, "--key", "k", "--", "true") // creates it
	var o startOptions
	if os.Geteuid() == 0 {
		o.attr = &syscall.SysProcAttr{Setsid: true, Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		// nobody must reach the database and the test's binary.
		for p := dir; p != "/"; p = filepath.Dir(p) {
			chmodOX(t, p)
		}
		chmodOX(t, filepath.Dir(lockctlBin))
	} else {
		if err := os.Chmod(db, 0o444); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	}
	r := h.runWith(o, "run", "--sqlite-path", db, "--key", "k", "--", "true")
	checkOneLineError(t, r, exitConfig, db)
	if !strings.Contains(r.stderr, "read-only") {
		t.Errorf("stderr %q does not say the store is read-only", r.stderr)
	}
}

func TestVersionNamesTheLibrary(t *testing.T) {
	h := newHarness(t)
	r := h.mustRun(0, "version")
	if !strings.Contains(r.stdout, ", lock SDK ") {
		t.Errorf("version printed %q, want the lock SDK's version too", r.stdout)
	}
}

func TestPasswordsStayOutOfErrors(t *testing.T) {
	h := newHarness(t)
	r := h.run("run", "--key", "k", "--driver", "redis", "--redis-url", "redis://u:hunter2@127.0.0.1:1", "--", "true")
	if strings.Contains(r.stderr, "hunter2") {
		t.Errorf("stderr %q shows the password", r.stderr)
	}
}

// chmodOX lets other users into a directory (read and search), so that
// nobody reaches what the test made.
func chmodOX(t *testing.T, dir string) {
	t.Helper()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm&0o005 != 0o005 {
		if err := os.Chmod(dir, perm|0o005); err != nil {
			t.Fatal(err)
		}
	}
}
