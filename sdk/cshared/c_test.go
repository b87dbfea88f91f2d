package main

import (
	"os/exec"
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
