package file

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenBadDirectory: every unusable lock directory fails at Open with an
// error that says what is wrong with it. The tests run as root, for whom
// permission bits stop nothing, so the unwritable cases use places that
// refuse new entries to everyone: /proc (the kernel creates its entries
// itself) and a path below a regular file.
func TestOpenBadDirectory(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "plain-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, dir, want string }{
		{"empty", "", "dir is empty"},
		{"regular file", file, "not a directory"},
		{"below a regular file", filepath.Join(file, "locks"), "not a directory"},
		{"existing, unwritable", "/proc", "not writable"},
		{"missing, cannot be created", "/proc/zerotal-lock", "lock directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, err := Open(c.dir)
			if err == nil {
				_ = d.Close()
				t.Fatalf("Open(%q) succeeded", c.dir)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "file: Open: ") {
				t.Errorf("Open(%q) = %v; want an error containing %q", c.dir, err, c.want)
			}
		})
	}
}

// TestOpenCreatesDirectory: a missing lock directory is created, parents
// too, and a relative path is made absolute once, at Open.
func TestOpenCreatesDirectory(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	d := openDriver(t, filepath.Join("a", "b", "locks"))
	want := filepath.Join(base, "a", "b", "locks")
	if d.dir != want {
		t.Errorf("lock directory %q; want %q", d.dir, want)
	}
	fi, err := os.Stat(want)
	if err != nil || !fi.IsDir() {
		t.Fatalf("lock directory: %v, %v", fi, err)
	}
	if perm := fi.Mode().Perm(); perm&0o022 != 0 {
		t.Errorf("created with mode %v; want no group or world write", perm)
	}
	if got := entries(t, want); len(got) != 0 {
		t.Errorf("Open left %q behind (its write probe?)", got)
	}
	mustAcquire(t, d, "k", newOwner(), time.Minute)
}

// TestOpenSweepsAbandonedPending: Open deletes pending directories old
// enough to be a crashed process's and unfinished sweeps, and leaves young
// pending directories and locks alone.
func TestOpenSweepsAbandonedPending(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, pendingPrefix+"old")
	young := filepath.Join(dir, pendingPrefix+"young")
	swept := filepath.Join(dir, sweepPrefix+"half-done")
	for _, p := range []string{old, young, swept} {
		if err := os.MkdirAll(filepath.Join(p, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, leaseName(0, 1, "owner")), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-pendingMaxAge - time.Minute)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	holder := newOwner()
	mustAcquire(t, openDriver(t, dir), "k", holder, time.Minute)

	d := openDriver(t, dir)
	got := strings.Join(entries(t, dir), " ")
	want := filepath.Base(young) + " " + filepath.Base(lockPath(dir, "k"))
	if got != want && got != filepath.Base(lockPath(dir, "k"))+" "+filepath.Base(young) {
		t.Errorf("after Open the lock directory holds %q; want %q", got, want)
	}
	if h, held, err := d.Inspect(testCtx(t), "k"); err != nil || !held || h.Owner != holder {
		t.Errorf("the sweep disturbed a lock: %+v, %v, %v", h, held, err)
	}
}
