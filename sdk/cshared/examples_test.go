package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The examples the docs show are these files, compiled and run here:
// docs/c-abi.md shows the C one, docs/python.md the Python ones.
const (
	cExample      = "examples/example.c"
	pythonExample = "examples/example.py" // in sdk/python, as the next two
	asyncExample  = "examples/async_example.py"
	forkExample   = "examples/workers.py"
)

// docsExamples lists the files each page must show, from the repository's
// root.
var docsExamples = map[string][]string{
	"docs/c-abi.md":  {"sdk/cshared/" + cExample},
	"docs/python.md": {"sdk/python/" + pythonExample, "sdk/python/" + asyncExample, "sdk/python/" + forkExample},
	"docs/node.md":   {"sdk/node/examples/quickstart.js", "sdk/node/examples/errors.js", "sdk/node/examples/config.js"},
}

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
		{pythonExample, `{"url":"sqlite://` + filepath.Join(t.TempDir(), "locks.db") + `"}`},
	} {
		out, _ := run(t, python(t, args...))
		checkExampleOutput(t, out)
	}
}

// TestPythonAsyncExample runs the asyncio example on SQLite.
func TestPythonAsyncExample(t *testing.T) {
	out, _ := run(t, python(t, asyncExample, `{"url":"sqlite://`+filepath.Join(t.TempDir(), "locks.db")+`"}`))
	checkOutput(t, out,
		`(?m)^report: built under fencing token [1-9][0-9]*$`,
		`(?m)^ledger: held by task 0, task 1, task 2 in turn$`,
		`(?m)^ledger: the waiting task was cancelled$`,
		`(?m)^ledger: free again, token [1-9][0-9]*$`)
}

// TestPythonForkExample runs the worker processes' example: three
// processes started with spawn take turns on one SQLite file.
func TestPythonForkExample(t *testing.T) {
	out, _ := run(t, python(t, forkExample, filepath.Join(t.TempDir(), "locks.db")))
	checkOutput(t, out,
		`(?m)^workers: 15 critical sections in 3 processes, 0 overlapping$`,
		`(?m)^workers: fencing tokens increase in time order: True$`)
}

// checkExampleOutput checks what the C example and example.py print.
func checkExampleOutput(t *testing.T, out string) {
	t.Helper()
	checkOutput(t, out,
		`(?m)^libzerotal_lock \S+$`,
		`(?m)^report: running under the lock with fencing token [1-9][0-9]*$`,
		`(?m)^invoice: held by owner [0-9a-f]{32}$`)
}

// checkOutput checks that out matches every pattern.
func checkOutput(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, re := range patterns {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("the example's output does not match %s:\n%s", re, out)
		}
	}
}

// TestDocsShowTheExamples checks that every code block a page marks with
// <!-- file: PATH --> is PATH, byte for byte, and that each page shows its
// examples: the docs show the programs the tests run.
func TestDocsShowTheExamples(t *testing.T) {
	block := regexp.MustCompile("(?s)<!-- file: (\\S+) -->\n```[a-z]*\n(.*?)```\n")
	for page, examples := range docsExamples {
		doc, err := os.ReadFile(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, b := range block.FindAllStringSubmatch(string(doc), -1) {
			want, err := os.ReadFile(filepath.Join("../..", b[1]))
			if err != nil {
				t.Errorf("%s shows %s, which cannot be read: %v", page, b[1], err)
				continue
			}
			if b[2] != string(want) {
				t.Errorf("%s's copy of %s differs from the file: paste the file again", page, b[1])
			}
			seen[b[1]] = true
		}
		for _, f := range examples {
			if !seen[f] {
				t.Errorf("%s does not show %s in a <!-- file: %s --> block", page, f, f)
			}
		}
	}
}
