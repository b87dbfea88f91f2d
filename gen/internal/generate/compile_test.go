package generate

import (
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCAndPythonCompile proves the C ABI's generated files are
// valid in their languages, for the fixture and the real spec: the header
// compiles as C11 and as C++ with every warning an error, and the Python
// module byte-compiles and passes mypy --strict. (The cgo exports are Go: the other tests check them,
// and building sdk/cshared checks them against the header.)
func TestGeneratedCAndPythonCompile(t *testing.T) {
	for _, spec := range []string{fixtureSpec, filepath.Join(repoRoot, SpecDir)} {
		files, err := FromSpec(spec, DefaultLayout())
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range files.Paths() {
			switch path.Ext(p) {
			case ".h":
				compileHeader(t, path.Base(p), files[p])
			case ".py":
				compilePython(t, files[p])
			}
		}
	}
}

func compileHeader(t *testing.T, name string, header []byte) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, name), header, 0o644); err != nil {
		t.Fatal(err)
	}
	src := "#include \"" + name + "\"\nint main(void) { return 0; }\n"
	for _, c := range []struct{ compiler, std, file string }{
		{"cc", "-std=c11", "main.c"},
		{"c++", "-std=c++11", "main.cc"},
	} {
		bin, err := exec.LookPath(c.compiler)
		if err != nil {
			t.Fatalf("%s not found on PATH: this test compiles the generated header (apt-get install g++)", c.compiler)
		}
		file := filepath.Join(dir, c.file)
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, c.std, "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "-I", dir, file).CombinedOutput()
		if err != nil {
			t.Errorf("%s does not compile with %s %s: %v\n%s", name, c.compiler, c.std, err, out)
		}
	}
}

func compilePython(t *testing.T, module []byte) {
	t.Helper()
	bin, err := exec.LookPath("python3")
	if err != nil {
		t.Fatal("python3 not found on PATH: this test byte-compiles the generated Python module")
	}
	cmd := exec.Command(bin, "-c", "import sys; compile(sys.stdin.read(), '_abi_gen.py', 'exec')")
	cmd.Stdin = strings.NewReader(string(module))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the generated Python module does not compile: %v\n%s", err, out)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "_abi_gen.py")
	if err := os.WriteFile(file, module, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(mypyPython(t), "-m", "mypy", "--strict", "--python-version", "3.10", "--cache-dir", filepath.Join(dir, "cache"), file)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("the generated Python module does not pass mypy --strict: %v\n%s", err, out)
	}
}

// mypyPython returns a Python that has mypy: python3 on the PATH, or
// Debian's /usr/bin/python3, which Debian's python3-mypy installs it for.
func mypyPython(t *testing.T) string {
	t.Helper()
	var candidates []string
	if bin, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, bin)
	}
	candidates = append(candidates, "/usr/bin/python3")
	for _, bin := range candidates {
		if exec.Command(bin, "-c", "import mypy").Run() == nil {
			return bin
		}
	}
	t.Fatalf("mypy not found for %s: this test type-checks the generated Python module (apt-get install python3-mypy)", strings.Join(candidates, " or "))
	return ""
}
