package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildDir is where the tests build the library: libzerotal_lock.so, the
// public header and the pkg-config file, laid out as make cshared does.
var buildDir string

// The library is built once per test binary. It is the test build (tag
// zl_testhooks: zl_test_live_handles, and a handle whose lookup panics),
// and it is never built with -race: ThreadSanitizer cannot map its shadow
// memory when the race runtime arrives in a shared library loaded by a
// host program.
var built struct {
	once sync.Once
	err  error
}

// library builds the library if needed and returns the directory holding
// it.
func library(t testing.TB) string {
	t.Helper()
	built.once.Do(func() {
		start := time.Now()
		out, err := exec.Command("go", "build", "-tags", "zl_testhooks", "-buildmode=c-shared",
			"-o", filepath.Join(buildDir, "libzerotal_lock.so"), ".").CombinedOutput()
		if err != nil {
			built.err = &buildError{"go build -buildmode=c-shared", out, err}
			return
		}
		t.Logf("built libzerotal_lock.so in %v", time.Since(start).Round(time.Millisecond))
		// cgo's by-product header is not the contract: the generated one is.
		if err := os.Remove(filepath.Join(buildDir, "libzerotal_lock.h")); err != nil {
			built.err = err
			return
		}
		header, err := os.ReadFile("zerotal_lock.h")
		if err == nil {
			err = os.WriteFile(filepath.Join(buildDir, "zerotal_lock.h"), header, 0o644)
		}
		if err != nil {
			built.err = err
			return
		}
		built.err = writePkgConfig(header)
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return buildDir
}

// writePkgConfig fills zerotal_lock.pc.in as make cshared does.
func writePkgConfig(header []byte) error {
	in, err := os.ReadFile("zerotal_lock.pc.in")
	if err != nil {
		return err
	}
	version := ""
	for _, line := range strings.Split(string(header), "\n") {
		if v, ok := strings.CutPrefix(line, "#define ZL_ABI_VERSION "); ok {
			version = v
		}
	}
	pc := strings.ReplaceAll(string(in), "@ABI_VERSION@", version)
	return os.WriteFile(filepath.Join(buildDir, "zerotal_lock.pc"), []byte(pc), 0o644)
}

type buildError struct {
	what string
	out  []byte
	err  error
}

func (e *buildError) Error() string {
	return e.what + ": " + e.err.Error() + "\n" + string(e.out)
}

// compileC compiles C sources into an executable linked with the library,
// with every warning an error, and returns its path.
func compileC(tb testing.TB, name string, sources ...string) string {
	tb.Helper()
	lib := library(tb)
	cc, err := exec.LookPath("cc")
	if err != nil {
		tb.Fatal("cc not found on PATH: these tests compile C programs against the library; install a C compiler (apt-get install gcc)")
	}
	exe := filepath.Join(tb.TempDir(), name)
	args := append([]string{"-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-o", exe}, sources...)
	args = append(args, "-I"+lib, "-L"+lib, "-Wl,-rpath,"+lib, "-lzerotal_lock", "-pthread")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		tb.Fatal(&buildError{"cc " + strings.Join(sources, " "), out, err})
	}
	return exe
}

// run runs a command with the environment the library expects in tests:
// no LOCK_* or REDIS_URL leaking in from the caller's, so that "from the
// environment" means the defaults.
func run(t *testing.T, cmd *exec.Cmd) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if cmd.Env == nil {
		cmd.Env = cleanEnv()
	}
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}

// cleanEnv is the environment without the library's configuration
// variables.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "LOCK_") || name == "REDIS_URL" || name == "ZEROTAL_LOCK_LIBRARY" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}
