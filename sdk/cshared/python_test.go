package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pythonDir is the Python client's directory.
const pythonDir = "../python"

// python3 returns the path of python3, or fails the test naming it.
func python3(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found on PATH: the Python client's tests need it (apt-get install python3)")
	}
	return bin
}

// python returns a python3 command running args in the Python client's
// directory, against the library the tests built.
func python(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	lib := library(t)
	dir, err := filepath.Abs(pythonDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python3(t), args...)
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

// The oldest Python the package supports (pyproject.toml's
// requires-python), which mypy checks the package and the examples
// against.
const oldestPython = "3.10"

// TestPythonTypes runs mypy --strict over the Python client, its examples
// and its build backend: the annotations must be complete and hold.
func TestPythonTypes(t *testing.T) {
	mypy := mypyPython(t)
	for _, c := range []struct {
		version string
		paths   []string
	}{
		{oldestPython, []string{"zerotal_lock", "examples"}},
		{"", []string{"build_backend"}}, // builds run on 3.11 and later (tomllib)
	} {
		args := []string{"-m", "mypy", "--strict", "--cache-dir=" + filepath.Join(t.TempDir(), "mypy")}
		if c.version != "" {
			args = append(args, "--python-version", c.version)
		}
		cmd := exec.Command(mypy, append(args, c.paths...)...)
		cmd.Dir = pythonDir
		cmd.Env = cleanEnv("PYTHONDONTWRITEBYTECODE=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mypy --strict %s: %v\n%s", strings.Join(c.paths, " "), err, out)
		}
		t.Log(strings.TrimSpace(string(out)))
	}
}

// mypyPython returns a Python that has mypy: python3 on the PATH, or
// Debian's /usr/bin/python3, which Debian's python3-mypy installs it for.
func mypyPython(t *testing.T) string {
	t.Helper()
	candidates := []string{}
	if bin, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, bin)
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, bin := range candidates {
		if exec.Command(bin, "-c", "import mypy").Run() == nil {
			return bin
		}
	}
	t.Fatalf("mypy not found for %s: the Python client's type check needs it (apt-get install python3-mypy)", strings.Join(candidates, " or "))
	return ""
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
