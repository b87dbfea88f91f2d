package main

import (
	"runtime"
	"strings"
	"testing"
)

// checkOneLineError fails unless r is a single line of error on stderr,
// naming want, with nothing that looks like a crash.
func checkOneLineError(t *testing.T, r result, code int, want string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit %d, want %d; stderr: %q", r.code, code, r.stderr)
	}
	if !strings.HasPrefix(r.stderr, "lockctl: ") || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("stderr %q, want one line starting with \"lockctl: \"", r.stderr)
	}
	if !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q does not name the problem (%q)", r.stderr, want)
	}
	for _, crash := range []string{"panic", "goroutine ", ".go:"} {
		if strings.Contains(r.stderr, crash) {
			t.Errorf("stderr %q looks like a crash", r.stderr)
		}
	}
	// In the user's terms: not the SDK's stacked prefixes, nor its Go API.
	for _, layer := range []string{": lock: ", "lock driver", "lock.", "for flag -"} {
		if strings.Contains(r.stderr, layer) {
			t.Errorf("stderr %q has the SDK's layers (%q) in it", r.stderr, layer)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--bogus", "--key", "k", "--", "true"}, "-bogus"},
		{[]string{"run", "--key", "k"}, "missing COMMAND"},
		{[]string{"run", "--", "true"}, "--key is required"},
		{[]string{"run", "--key", "k", "--ttl", "0", "--", "true"}, "--ttl 0s is too short"},
		{[]string{"run", "--key", "k", "--ttl", "500us", "--", "true"}, "at least 1ms"},
		{[]string{"run", "--key", "k", "--ttl", "soon", "--", "true"}, `--ttl "soon": want seconds (60, 2.5) or a duration with a unit`},
		{[]string{"run", "--key", "k", "--wait", "1e3", "--", "true"}, "want seconds"},
		{[]string{"run", "--key", "k", "--wait", "99999999999", "--", "true"}, "too long"},
		{[]string{"run", "--key", "k", "--busy-exit", "256", "--", "true"}, "--busy-exit 256 is not an exit status"},
		{[]string{"run", "--key", "k", "--busy-exit", "x", "--", "true"}, `--busy-exit "x": not a whole number`},
		{[]string{"run", "--key", "k", "--quiet", "--verbose", "--", "true"}, "contradict"},
		{[]string{"run", "--key", "k", "--wait", "-1s", "--", "true"}, "--wait -1s is negative"},
		{[]string{"run", "--key", "k", "--retry-delay", "0", "--", "true"}, "--retry-delay"},
		{[]string{"run", "--key", "k", "--grace", "-1s", "--", "true"}, "--grace"},
		{[]string{"run", "--key", "k", "--redis-url", "redis://localhost", "--", "true"}, "add --driver redis"},
		{[]string{"run", "--key", strings.Repeat("k", 2000), "--", "true"}, "--key: is 2000 bytes"},
		{[]string{"run", "--key", "a\xffb", "--", "true"}, "--key: must be valid UTF-8"},
		{[]string{"status"}, "missing KEY"},
		{[]string{"status", "--json", "k", "--nope"}, "-nope"},
		{[]string{"release", "--force"}, "missing KEY"},
		{[]string{"version", "extra"}, "unexpected argument"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			checkOneLineError(t, h.run(tc.args...), exitUsage, tc.want)
		})
	}
	t.Run("no arguments", func(t *testing.T) {
		r := h.run()
		if r.code != exitUsage || !strings.Contains(r.stderr, "Usage:") {
			t.Errorf("exit %d, stderr %q; want %d and the usage", r.code, r.stderr, exitUsage)
		}
	})
}

func TestConfigurationErrors(t *testing.T) {
	h := newHarness(t)
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown driver", nil, []string{"--driver", "etcd"}, `unknown driver "etcd"`},
		{"memory driver", []string{"LOCK_DRIVER=memory"}, nil, "memory driver"},
		{"sqlite in memory", []string{"LOCK_SQLITE_PATH=:memory:"}, nil, ":memory:"},
		{"sqlite in a missing directory", nil, []string{"--sqlite-path", h.path("missing/locks.db")}, "no such file or directory"},
		{"sqlite on a directory", nil, []string{"--sqlite-path", h.dir}, h.dir},
		{"file without a directory", nil, []string{"--driver", "file"}, "--dir"},
		{"redis without a URL", nil, []string{"--driver", "redis"}, "--redis-url"},
		{"redis with a bad URL", nil, []string{"--driver", "redis", "--redis-url", "http://localhost"}, "scheme"},
		{"unreachable redis", nil, []string{"--driver", "redis", "--redis-url", "redis://127.0.0.1:1"}, "redis at 127.0.0.1:1: cannot inspect \"k\": cannot connect to 127.0.0.1:1: connection refused; is the server running"},
		{"unreachable postgres", nil, []string{"--url", "postgres://127.0.0.1:1/test"}, "postgres at 127.0.0.1:1: cannot inspect \"k\": cannot connect to 127.0.0.1:1"},
		{"unknown redis host", nil, []string{"--driver", "redis", "--redis-url", "redis://no-such-host.invalid:6379"}, "cannot resolve the host name no-such-host.invalid"},
		{"a password is not shown", nil, []string{"--driver", "redis", "--redis-url", "redis://u:hunter2@127.0.0.1:1"}, "redis at 127.0.0.1:1"},
		{"no state directory", []string{"LOCK_SQLITE_PATH=", "XDG_STATE_HOME=", "HOME="}, nil, "--sqlite-path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, cmd := range [][]string{
				append(append([]string{"run", "--key", "k"}, tc.args...), "--", "true"),
				append(append([]string{"status"}, tc.args...), "k"),
			} {
				checkOneLineError(t, h.runWith(startOptions{env: tc.env}, cmd...), exitConfig, tc.want)
			}
		})
	}
}

func TestDefaultDatabaseIsInTheStateDirectory(t *testing.T) {
	h := newHarness(t)
	xdg := []string{"LOCK_SQLITE_PATH=", "XDG_STATE_HOME=" + h.path("xdg")}
	h.mustRunWith(xdg, 0, "run", "--key", "k", "--", "true")
	if !fileExists(h.path("xdg/zerotal-lock/locks.db")) {
		t.Error("no database in $XDG_STATE_HOME/zerotal-lock")
	}
	home := []string{"LOCK_SQLITE_PATH=", "XDG_STATE_HOME=relative/is/ignored", "HOME=" + h.path("home")}
	h.mustRunWith(home, 0, "run", "--key", "k", "--", "true")
	if !fileExists(h.path("home/.local/state/zerotal-lock/locks.db")) {
		t.Error("no database in ~/.local/state/zerotal-lock")
	}
}

func TestFlagsWinOverEnvironment(t *testing.T) {
	h := newHarness(t)
	env := []string{"LOCK_SQLITE_PATH=" + h.path("env.db"), "LOCK_PREFIX=env:"}
	_, _, release := h.startHolder("k", "--sqlite-path", h.path("flag.db"), "--prefix", "flag:")
	defer release()
	if fileExists(h.path("env.db")) {
		t.Error("the environment's database was used despite --sqlite-path")
	}
	if s := h.statusWith(env, []string{"--sqlite-path", h.path("flag.db"), "--prefix", "flag:"}, "k"); !s.Locks[0].Held {
		t.Error("the lock is not where the flags put it")
	}
	if s := h.statusWith(env, []string{"--sqlite-path", h.path("flag.db")}, "k"); s.Locks[0].Held {
		t.Error("LOCK_PREFIX=env: sees the lock taken with --prefix flag:")
	}
}

func TestHelp(t *testing.T) {
	h := newHarness(t)
	for _, cmd := range []string{"run", "status", "release", "version"} {
		for _, args := range [][]string{{cmd, "--help"}, {cmd, "-h"}, {"help", cmd}} {
			r := h.mustRun(0, args...)
			if !strings.HasPrefix(r.stdout, "Usage: lockctl "+cmd) || !strings.Contains(r.stdout, "Example") {
				t.Errorf("lockctl %s printed\n%s\nwant usage and examples", strings.Join(args, " "), r.stdout)
			}
		}
	}
	r := h.mustRun(0, "run", "--help")
	for _, want := range []string{"--key", "--ttl", "--wait", "--retry-delay", "--grace", "--driver", "--sqlite-path", "--redis-url", "--dir", "--prefix", "Exit status", "75", "79", "LOCK_TOKEN"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("run --help does not mention %s", want)
		}
	}
	if r := h.mustRun(0, "--help"); !strings.Contains(r.stdout, "lockctl run") {
		t.Errorf("lockctl --help printed %q", r.stdout)
	}
}

func TestVersion(t *testing.T) {
	h := newHarness(t)
	r := h.mustRun(0, "version")
	if !strings.HasPrefix(r.stdout, "lockctl ") || !strings.Contains(r.stdout, runtime.Version()) || strings.Count(r.stdout, "\n") != 1 {
		t.Errorf("version printed %q, want one line with lockctl's version and %s", r.stdout, runtime.Version())
	}
}

// "--" is the end of the flags, never a flag's value.
func TestDoubleDashIsNeverAFlagValue(t *testing.T) {
	h := newHarness(t)
	r := h.run("status", "--prefix", "--", "a", "--json")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--prefix needs a value") {
		t.Fatalf("status --prefix -- a --json: exit %d, stderr %q; want a usage error naming --prefix", r.code, r.stderr)
	}
	h.mustRun(0, "status", "--prefix=--", "a") // the value "--" itself, when asked for
}
