package main

import (
	"archive/zip"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The wheel's file name, as the build backend prints it.
var wheelName = regexp.MustCompile(`^zerotal_lock-(\d+\.\d+\.\d+\S*)-py3-none-linux_[a-z0-9_]+\.whl$`)

// TestWheel builds the Python client's wheel as make wheel does (around
// the library the tests built), checks what it holds, installs it with pip
// into a fresh virtual environment, and runs a script there in a clean
// environment: no ZEROTAL_LOCK_LIBRARY, no PYTHONPATH, outside the
// repository. The package must find its bundled library and take locks.
// pip's own PEP 517 route (pip wheel sdk/python) must give the same bytes.
func TestWheel(t *testing.T) {
	start := time.Now()
	lib := filepath.Join(library(t), "libzerotal_lock.so")
	py := python3(t)
	backend, err := filepath.Abs(filepath.Join(pythonDir, "build_backend", "zerotal_lock_backend.py"))
	if err != nil {
		t.Fatal(err)
	}

	// The virtual environment (ensurepip is the slow part) is made while
	// the wheel is built; pip then builds it again while installing it.
	venv := filepath.Join(t.TempDir(), "venv")
	pip := filepath.Join(venv, "bin", "pip")
	pipEnv := outsideEnv("PIP_CONFIG_FILE="+os.DevNull, "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1")
	dist, viaPip := t.TempDir(), t.TempDir()
	var stdout string
	parallel(t,
		func() error {
			if out, err := exec.Command(py, "-m", "venv", venv).CombinedOutput(); err != nil {
				return fmt.Errorf("%s -m venv failed: the wheel test needs venv and ensurepip (Debian: apt-get install python3-venv): %v\n%s", py, err, out)
			}
			return nil
		},
		func() (err error) {
			stdout, err = output(exec.Command(py, backend, "--library", lib, "--out", dist), nil)
			return err
		})
	wheel := strings.TrimSpace(stdout)
	m := wheelName.FindStringSubmatch(filepath.Base(wheel))
	if m == nil {
		t.Fatalf("the backend wrote %q, not a zerotal_lock py3-none-linux wheel", wheel)
	}
	version := m[1]
	parallel(t,
		func() error {
			_, err := output(exec.Command(pip, "wheel", "--no-index", "--no-deps", "--quiet", "--wheel-dir", viaPip,
				"--config-settings", "library="+lib, pythonDir), pipEnv)
			return err
		},
		func() error {
			_, err := output(exec.Command(pip, "install", "--no-index", "--quiet", wheel), pipEnv)
			return err
		})
	checkWheel(t, wheel, version, lib)
	again, err := os.ReadFile(filepath.Join(viaPip, filepath.Base(wheel)))
	if err != nil {
		t.Fatalf("pip wheel did not write %s: %v", filepath.Base(wheel), err)
	}
	if first, _ := os.ReadFile(wheel); !bytes.Equal(first, again) {
		t.Error("pip wheel and the backend's command built different wheels from the same tree: the build is not reproducible")
	}

	work := t.TempDir()
	script := filepath.Join(work, "take_a_lock.py")
	if err := os.WriteFile(script, []byte(installedScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(venv, "bin", "python"), script, filepath.Join(work, "locks.db"), version)
	cmd.Dir = work
	cmd.Env = outsideEnv()
	out, _ := run(t, cmd)
	if !strings.HasSuffix(out, "ok\n") {
		t.Fatalf("the script in the virtual environment did not finish:\n%s", out)
	}
	t.Logf("%s: %.1f MB; built, installed and used in %v\n%s", filepath.Base(wheel),
		float64(fileSize(t, wheel))/1e6, time.Since(start).Round(100*time.Millisecond), out)
}

// installedScript runs in the virtual environment: the installed package,
// its bundled library and its metadata, locks on memory and on a SQLite
// file, from threads and from asyncio.
const installedScript = `import asyncio, importlib.metadata, os, sys
import zerotal_lock

db, version = sys.argv[1], sys.argv[2]
package = os.path.dirname(zerotal_lock.__file__)
assert package.startswith(sys.prefix), "imported from " + package
assert zerotal_lock.library_path() == os.path.join(package, "_lib", "libzerotal_lock.so"), zerotal_lock.library_path()
assert os.path.exists(os.path.join(package, "py.typed")), "py.typed is not installed"
assert zerotal_lock.__version__ == version, zerotal_lock.__version__
assert importlib.metadata.version("zerotal-lock") == version
assert importlib.metadata.metadata("zerotal-lock")["Requires-Python"] == ">=3.10"
print("library", zerotal_lock.library_path())

with zerotal_lock.Manager({"driver": "memory"}) as m:
    with m.try_lock("wheel:memory", ttl=5) as held:
        print("memory: token", held.token)
    with m.lock("wheel:memory", ttl=5) as lock:
        assert lock.acquire(), "the with-block did not release"

with zerotal_lock.Manager({"url": "sqlite://" + db}) as a, zerotal_lock.Manager({"driver": "sqlite", "sqlite": {"path": db}}) as b:
    with a.try_lock("wheel:sqlite", ttl=5, refresh=True) as held:
        try:
            with b.try_lock("wheel:sqlite", ttl=5):
                raise SystemExit("two managers held one key")
        except zerotal_lock.NotAcquiredError as e:
            print("sqlite: token", held.token, "excludes the other manager (HTTP %d)" % e.http_status)
    assert b.try_run("wheel:sqlite", 5, lambda held: held.token) > 0, "the key was not released"

async def main():
    async with zerotal_lock.AsyncManager({"url": "sqlite://" + db}) as m:
        async def work(held):
            await asyncio.sleep(0.01)
            return held.token
        print("asyncio: token", await m.try_run("wheel:async", 5, work))

asyncio.run(main())
print("ok")
`

// checkWheel checks the wheel's contents: the package with py.typed and
// the bundled library (the one given, executable), metadata naming the
// version, the WHEEL tag matching the file name, and a RECORD whose hashes
// and sizes are right for every file.
func checkWheel(t *testing.T, wheel, version, lib string) {
	t.Helper()
	z, err := zip.OpenReader(wheel)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	distInfo := "zerotal_lock-" + version + ".dist-info/"
	files := map[string][]byte{}
	for _, f := range z.File {
		r, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		files[f.Name] = data
		if f.Name == "zerotal_lock/_lib/libzerotal_lock.so" && f.Mode().Perm()&0o111 == 0 {
			t.Errorf("the bundled library is not executable: %v", f.Mode())
		}
	}
	for _, name := range []string{"zerotal_lock/__init__.py", "zerotal_lock/_abi_gen.py", "zerotal_lock/_aio.py", "zerotal_lock/py.typed",
		"zerotal_lock/VERSION", distInfo + "METADATA", distInfo + "WHEEL", distInfo + "RECORD", distInfo + "top_level.txt"} {
		if _, ok := files[name]; !ok {
			t.Errorf("the wheel has no %s", name)
		}
	}
	want, err := os.ReadFile(lib)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(files["zerotal_lock/_lib/libzerotal_lock.so"], want) {
		t.Error("the wheel does not bundle the library it was given")
	}
	for name := range files {
		if strings.Contains(name, "__pycache__") || strings.HasPrefix(name, "tests/") || strings.HasPrefix(name, "build_backend/") {
			t.Errorf("the wheel holds %s", name)
		}
	}
	meta := string(files[distInfo+"METADATA"])
	for _, line := range []string{"Metadata-Version: 2.1", "Name: zerotal-lock", "Version: " + version, "Requires-Python: >=3.10",
		"Classifier: Typing :: Typed", "Description-Content-Type: text/markdown"} {
		if !strings.Contains(meta, "\n"+line+"\n") && !strings.HasPrefix(meta, line+"\n") {
			t.Errorf("METADATA has no line %q:\n%s", line, meta)
		}
	}
	if readme, _ := os.ReadFile(filepath.Join(pythonDir, "README.md")); !strings.HasSuffix(meta, "\n\n"+string(readme)) {
		t.Error("METADATA's long description is not sdk/python/README.md")
	}
	tag := strings.TrimSuffix(strings.SplitN(filepath.Base(wheel), "-", 3)[2], ".whl")
	if w := string(files[distInfo+"WHEEL"]); !strings.Contains(w, "\nTag: "+tag+"\n") || !strings.Contains(w, "Root-Is-Purelib: false\n") {
		t.Errorf("WHEEL does not say Tag: %s on a platform (not purelib) root:\n%s", tag, w)
	}
	recorded := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(files[distInfo+"RECORD"])), "\n") {
		parts := strings.Split(line, ",")
		if len(parts) != 3 {
			t.Errorf("RECORD line %q", line)
			continue
		}
		recorded[parts[0]] = true
		if parts[0] == distInfo+"RECORD" {
			continue
		}
		data, ok := files[parts[0]]
		sum := sha256.Sum256(data)
		if want := fmt.Sprintf("sha256=%s", base64.RawURLEncoding.EncodeToString(sum[:])); !ok || parts[1] != want || parts[2] != fmt.Sprint(len(data)) {
			t.Errorf("RECORD line %q does not match the file (%s, %d bytes)", line, want, len(data))
		}
	}
	for name := range files {
		if !recorded[name] {
			t.Errorf("RECORD does not list %s", name)
		}
	}
}

// parallel runs fns at once and fails the test with their errors.
func parallel(t *testing.T, fns ...func() error) {
	t.Helper()
	errs := make(chan error, len(fns))
	for _, fn := range fns {
		go func() { errs <- fn() }()
	}
	failed := false
	for range fns {
		if err := <-errs; err != nil {
			t.Error(err)
			failed = true
		}
	}
	if failed {
		t.FailNow()
	}
}

// output runs cmd with env (nil: cleanEnv's) and returns its stdout, or an
// error with both its outputs.
func output(cmd *exec.Cmd, env []string) (string, error) {
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	cmd.Env = env
	if env == nil {
		cmd.Env = cleanEnv()
	}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(cmd.Args, " "), err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// outsideEnv is the environment of a program that knows nothing of this
// repository: no library variables, no PYTHONPATH, no virtual environment
// of the caller's.
func outsideEnv(extra ...string) []string {
	var env []string
	for _, kv := range cleanEnv() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP":
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func fileSize(t *testing.T, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
