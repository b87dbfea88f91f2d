package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// nodeDir is the Node.js package's directory.
const nodeDir = "../node"

// nodeBin returns node's path, and checks that the package's npm
// dependencies are installed (make npm-deps: npm ci from the lockfile).
func nodeBin(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node not found on PATH: the Node.js package's tests need Node.js 20 or later and npm (apt-get install nodejs npm)")
	}
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", "koffi", "package.json")); err != nil {
		t.Fatal("sdk/node/node_modules has no koffi: install the package's dependencies with `make npm-deps` (npm ci in sdk/node)")
	}
	return bin
}

// node returns a command running node with args in the package's
// directory, against the library the tests built.
func node(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	bin := nodeBin(t)
	lib := library(t)
	dir, err := filepath.Abs(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = cleanEnv("ZEROTAL_LOCK_LIBRARY=" + filepath.Join(lib, "libzerotal_lock.so"))
	return cmd
}

// TestNode runs the Node.js package's suite (sdk/node/test, node --test)
// against the test build of the library: the API, errors, loss,
// cancellation, bad input, close, the event loop and the thread pool,
// exits, the examples docs/node.md shows, and the TypeScript declarations.
func TestNode(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(nodeDir, "test", "*.test.js"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in %s/test: %v", nodeDir, err)
	}
	args := []string{"--test"}
	for _, f := range files {
		args = append(args, filepath.Join("test", filepath.Base(f)))
	}
	stdout, _ := run(t, node(t, args...))
	if !regexp.MustCompile(`(?m)^# fail 0$`).MatchString(stdout) {
		t.Fatalf("the Node.js tests did not pass:\n%s", stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "# tests") || strings.HasPrefix(line, "# pass") || strings.Contains(line, " ticks in ") || strings.Contains(line, "thread-pool") || strings.Contains(line, "took") {
			t.Log(strings.TrimSpace(line))
		}
	}
}

// TestNodeInstall packs the package as make npm-pack does (with the test
// build of the library as its prebuilt), installs the tarball into a fresh
// project with npm (koffi from npm's cache, else the registry), and runs a
// script there that takes and releases a lock with no environment variable
// set: the package finds its bundled library on its own.
func TestNodeInstall(t *testing.T) {
	bin := nodeBin(t)
	lib := library(t)
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm not found on PATH: the install test installs the packed package with it (apt-get install npm)")
	}
	dist := t.TempDir()
	packed, _ := run(t, node(t, "scripts/pack.js", "--library", filepath.Join(lib, "libzerotal_lock.so"), "--out", dist))
	tarball := strings.TrimSpace(packed)
	if info, err := os.Stat(tarball); err != nil || !strings.HasSuffix(tarball, ".tgz") {
		t.Fatalf("pack.js wrote %q: %v", tarball, err)
	} else {
		t.Logf("%s: %.1f MB", filepath.Base(tarball), float64(info.Size())/1e6)
	}

	project := t.TempDir()
	if err := os.WriteFile(filepath.Join(project, "package.json"), []byte(`{"name":"install-test","version":"1.0.0","private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, npm, "install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", tarball)
	install.Dir = project
	install.Env = cleanEnv()
	start := time.Now()
	run(t, install)
	t.Logf("npm install of the tarball took %v", time.Since(start).Round(time.Millisecond))

	script := `
const { Lock, version } = require('@zerotal/lock');
Lock.try('install-test', 5, (lock) => {
  console.log('held ' + lock.key + ' with token ' + lock.token + ' from ' + require.resolve('@zerotal/lock'));
}).then(() => Lock.make('install-test', 5).acquire()).then((free) => console.log('released ' + free + ', library ' + version()));
`
	cmd := exec.Command(bin, "-e", script)
	cmd.Dir = project
	cmd.Env = cleanEnv() // no LOCK_*, REDIS_URL or ZEROTAL_LOCK_LIBRARY
	out, _ := run(t, cmd)
	want := regexp.MustCompile(`(?s)^held install-test with token [1-9][0-9]* from ` + regexp.QuoteMeta(project) + `/node_modules/@zerotal/lock/lib/index\.js\nreleased true, library \S+\n$`)
	if !want.MatchString(out) {
		t.Fatalf("the installed package's script printed:\n%s", out)
	}
}
