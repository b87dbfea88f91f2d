package etcdtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// BinaryEnv names an etcd server binary to run instead of the one Binary
// builds: etcd v3.5 or newer (the tests use its --unsafe-no-fsync flag).
const BinaryEnv = "ZEROTAL_ETCD_BIN"

// ServerVersion is the etcd release Binary builds, the same as the client
// module the driver is built with.
const ServerVersion = "v3.7.3"

// serverModule is the directory, next to this file, of the module that
// builds the server.
const serverModule = "etcdserver"

// buildState is the outcome of finding or building the binary.
type buildState struct {
	once sync.Once
	path string
	err  error
}

// build caches the binary once per process: every test of a run uses the
// same server.
var build = new(buildState)

// Binary returns the path of the etcd server the tests start: $ZEROTAL_ETCD_BIN
// when set, otherwise etcd ServerVersion built by `go build` from the module
// in etcdtest/etcdserver and cached in the user's cache directory, so only
// the first run on a machine pays for the build (about 20 s on two cores).
//
// It fails t, never skips it, when no server can be had, and says what to
// install or set.
func Binary(t testing.TB) string {
	t.Helper()
	b := build
	b.once.Do(func() { b.path, b.err = findBinary() })
	if b.err != nil {
		t.Fatalf("etcdtest: no etcd server to run; these tests start private servers and never skip: %v", b.err)
	}
	return b.path
}

// findBinary is Binary without the caching and the testing.TB.
func findBinary() (string, error) {
	if bin := os.Getenv(BinaryEnv); bin != "" {
		info, err := os.Stat(bin)
		if err != nil || info.IsDir() || info.Mode()&0o111 == 0 {
			return "", fmt.Errorf("$%s=%q is not an executable file", BinaryEnv, bin)
		}
		return bin, nil
	}
	src, err := moduleDir()
	if err != nil {
		return "", err
	}
	sum, err := sourceHash(src)
	if err != nil {
		return "", err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "zerotal-lock", "etcd-"+ServerVersion+"-"+sum)
	bin := filepath.Join(dir, "etcd")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating the cache directory for the etcd build: %w", err)
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("building etcd %s needs the go command on $PATH (%v); or set $%s to an etcd server binary, v3.5 or newer",
			ServerVersion, err, BinaryEnv)
	}
	// Build to a name of our own and rename: test binaries of several
	// packages may build at once, and a rename is atomic.
	tmp, err := os.CreateTemp(dir, "etcd-*.tmp")
	if err != nil {
		return "", fmt.Errorf("creating the etcd build output: %w", err)
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command(goTool, "build", "-o", tmp.Name(), ".")
	cmd.Dir = src
	// The server module is not part of any workspace, and its go.sum is
	// complete: nothing may rewrite it.
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building etcd %s from %s with %s failed (%v):\n%s\n"+
			"It needs the Go module proxy (or a module cache holding go.etcd.io/etcd/server/v3 %s). "+
			"Alternatively set $%s to an etcd server binary, v3.5 or newer (an official release from github.com/etcd-io/etcd/releases)",
			ServerVersion, src, goTool, err, out, ServerVersion, BinaryEnv)
	}
	if err := os.Rename(tmp.Name(), bin); err != nil {
		return "", fmt.Errorf("installing the etcd build in %s: %w", dir, err)
	}
	return bin, nil
}

// moduleDir returns the directory of the server's module, next to this
// source file.
func moduleDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("cannot locate etcdtest's source; set $%s to an etcd server binary", BinaryEnv)
	}
	dir := filepath.Join(filepath.Dir(file), serverModule)
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		// A copy of etcdtest from the module cache has no nested module.
		return "", fmt.Errorf("the etcd server module %s is missing (%v); set $%s to an etcd server binary, v3.5 or newer",
			dir, err, BinaryEnv)
	}
	return dir, nil
}

// sourceHash names a build by the module's files, so that a change to
// them (a new etcd version) builds afresh instead of reusing a stale binary.
func sourceHash(dir string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.mod", "go.sum", "main.go"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "", fmt.Errorf("reading the etcd server module: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	fmt.Fprintf(h, "%s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}
