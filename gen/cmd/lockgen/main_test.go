package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyDir copies a directory tree.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// lockgen checks by default and fails on a tree without its files, writes
// them with -w, and then checks clean.
func TestCheckThenWrite(t *testing.T) {
	t.Setenv("GOWORK", "off") // the copy is a module of its own, outside the workspace
	root := t.TempDir()
	copyDir(t, "../../../spec", filepath.Join(root, "spec"))

	var stdout, stderr bytes.Buffer
	if code := run(root, false, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "run `make generate`") {
		t.Fatalf("check on an empty tree = %d, stderr %q; want 1 and advice", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join(root, "sdk")); !os.IsNotExist(err) {
		t.Fatalf("check wrote files: %v", err)
	}
	stdout.Reset()
	if code := run(root, true, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "create sdk/go/api_gen.go") {
		t.Fatalf("-w = %d, stdout %q", code, stdout.String())
	}
	stderr.Reset()
	if code := run(root, false, &stdout, &stderr); code != 0 {
		t.Fatalf("check after -w = %d, stderr %q; want 0", code, stderr.String())
	}
	if code := run(filepath.Join(root, "missing"), false, &stdout, &stderr); code != 1 {
		t.Errorf("a root without a spec gave %d; want 1", code)
	}
}
