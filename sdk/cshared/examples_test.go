package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The examples docs/c-abi.md shows are these files, compiled and run here.
const (
	cExample      = "examples/example.c"
	pythonExample = "examples/example.py" // in sdk/python
	docsPage      = "../../docs/c-abi.md"
)

// TestCExample builds the C example with the flags pkg-config gives for
// the library's .pc file, as the docs say, and runs it.
func TestCExample(t *testing.T) {
	lib := library(t)
	pkgConfig, err := exec.LookPath("pkg-config")
	if err != nil {
		t.Fatal("pkg-config not found on PATH: the docs build the example with it (apt-get install pkg-config)")
	}
	cmd := exec.Command(pkgConfig, "--cflags", "--libs", "zerotal_lock")
	cmd.Env = cleanEnv("PKG_CONFIG_PATH=" + lib)
	flags, _ := run(t, cmd)
	cc, err := exec.LookPath("cc")
	if err != nil {
		t.Fatal("cc not found on PATH (apt-get install gcc)")
	}
	exe := filepath.Join(t.TempDir(), "example")
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-o", exe, cExample}, strings.Fields(flags)...)
	run(t, exec.Command(cc, args...))

	for _, config := range []string{"", `{"driver":"sqlite","sqlite":{"path":"` + filepath.Join(t.TempDir(), "locks.db") + `"}}`} {
		var cmd *exec.Cmd
		if config == "" {
			cmd = exec.Command(exe)
		} else {
			cmd = exec.Command(exe, config)
		}
		out, _ := run(t, cmd)
		checkExampleOutput(t, out)
	}
}

// TestPythonExample runs the Python example, from the environment and on
// SQLite.
func TestPythonExample(t *testing.T) {
	for _, args := range [][]string{
		{pythonExample},
		{pythonExample, `{"driver":"sqlite","sqlite":{"path":"` + filepath.Join(t.TempDir(), "locks.db") + `"}}`},
	} {
		out, _ := run(t, python(t, args...))
		checkExampleOutput(t, out)
	}
}

// checkExampleOutput checks what both examples print.
func checkExampleOutput(t *testing.T, out string) {
	t.Helper()
	for _, re := range []string{
		`(?m)^libzerotal_lock \S+$`,
		`(?m)^report: running under the lock with fencing token [1-9][0-9]*$`,
		`(?m)^invoice: held by owner [0-9a-f]{32}$`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the example's output does not match %s:\n%s", re, out)
		}
	}
}

// TestDocsShowTheExamples checks that every code block docs/c-abi.md marks
// with <!-- file: PATH --> is PATH, byte for byte: the docs show the
// programs the tests run.
func TestDocsShowTheExamples(t *testing.T) {
	doc, err := os.ReadFile(docsPage)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n```[a-z]*\n(.*?)```\n").FindAllStringSubmatch(string(doc), -1)
	seen := map[string]bool{}
	for _, b := range blocks {
		path := filepath.Join("../..", b[1])
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s shows %s, which cannot be read: %v", docsPage, b[1], err)
			continue
		}
		if b[2] != string(want) {
			t.Errorf("%s's copy of %s differs from the file: paste the file again", docsPage, b[1])
		}
		seen[b[1]] = true
	}
	for _, f := range []string{"sdk/cshared/" + cExample, "sdk/python/" + pythonExample} {
		if !seen[f] {
			t.Errorf("%s does not show %s in a <!-- file: %s --> block", docsPage, f, f)
		}
	}
}
