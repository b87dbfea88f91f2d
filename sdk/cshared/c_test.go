package main

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestC runs ctest/abi_test.c: every function of the header, the misuse
// cases (NULL pointers, unknown, freed and wrong-kind handles, double free,
// use after close, failing callbacks, a panic inside the library), and
// pthreads contending on one key with an overlap counter that must stay 0.
func TestC(t *testing.T) {
	exe := compileC(t, "abi_test", "ctest/abi_test.c")
	stdout, stderr := run(t, exec.Command(exe))
	if !strings.Contains(stdout, "ok: every check passed") {
		t.Fatalf("abi_test did not pass:\n%s\n%s", stdout, stderr)
	}
	// The contained panic of the misuse test dumps its stack once.
	if strings.Count(stderr, "(contained; the call returned ZL_INTERNAL)") != 1 {
		t.Errorf("want one panic report on stderr, got:\n%s", stderr)
	}
}

// TestFreeingABusyHandleOrphansNoKey frees a handle while its zl_block or
// zl_acquire runs on another thread, just as the holder releases the key
// the call may be granted, on every driver: after zl_free returns, the key
// must be free.
func TestFreeingABusyHandleOrphansNoKey(t *testing.T) {
	exe := compileC(t, "free_race_test", "ctest/free_race_test.c")
	addr := startRedis(t)
	prefix := "free-race-" + randomHex(t) + ":"
	for name, cfg := range map[string]string{
		"memory": `{"driver":"memory","prefix":"` + prefix + `"}`,
		"sqlite": `{"driver":"sqlite","sqlite":{"path":"` + filepath.Join(t.TempDir(), "locks.db") + `"}}`,
		"file":   `{"driver":"file","file":{"dir":"` + filepath.Join(t.TempDir(), "locks") + `"}}`,
		"redis":  `{"driver":"redis","prefix":"` + prefix + `","redis":{"url":"redis://` + addr + `/0"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr := run(t, exec.Command(exe, cfg, "100"))
			if !strings.Contains(stdout, "ok: no key orphaned") {
				t.Fatalf("free_race_test on %s:\n%s\n%s", name, stdout, stderr)
			}
		})
	}
}

// TestTheLibraryIsQuietOnItsHostsStderr: with the Redis server down, calls
// fail with ZL_DRIVER, and nothing (go-redis's dial failures included)
// reaches the host program's stderr.
func TestTheLibraryIsQuietOnItsHostsStderr(t *testing.T) {
	exe := compileC(t, "quiet_test", "ctest/quiet_test.c")
	stdout, stderr := run(t, exec.Command(exe, "redis://"+closedPort(t)+"/0"))
	if stdout != "ok\n" {
		t.Fatalf("quiet_test: %s", stdout)
	}
	if stderr != "" {
		t.Fatalf("the library wrote on its host's stderr:\n%s", stderr)
	}
}

// closedPort returns a loopback address nobody listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestCHold runs ctest/hold_test.c: the event-loop form of the C ABI
// (zl_hold, zl_hold_done, zl_notify_fd), its grants, hand-offs, losses by
// force-release and by expiry, cancellation, bad input and zl_close, all
// driven from poll() on the notification descriptor.
func TestCHold(t *testing.T) {
	exe := compileC(t, "hold_test", "ctest/hold_test.c")
	stdout, stderr := run(t, exec.Command(exe))
	if !strings.Contains(stdout, "ok: every check passed") {
		t.Fatalf("hold_test did not pass:\n%s\n%s", stdout, stderr)
	}
}
