package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonDir is the Python client's directory.
const pythonDir = "../python"

// python returns a python3 command running args in the Python client's
// directory, against the library the tests built.
func python(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	lib := library(t)
	bin, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found on PATH: the Python client's tests need it (standard library only)")
	}
	dir, err := filepath.Abs(pythonDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv("ZEROTAL_LOCK_LIBRARY="+filepath.Join(lib, "libzerotal_lock.so"), "PYTHONPATH="+dir, "PYTHONDONTWRITEBYTECODE=1")
	return cmd
}

// TestPython runs the Python client's unittest suite
// (sdk/python/tests) against the test build of the library.
func TestPython(t *testing.T) {
	_, stderr := run(t, python(t, "-m", "unittest", "discover", "-s", "tests", "-v"))
	if !strings.Contains(stderr, "\nOK") {
		t.Fatalf("the Python tests did not report OK:\n%s", stderr)
	}
	t.Log(lastLines(stderr, 3))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
