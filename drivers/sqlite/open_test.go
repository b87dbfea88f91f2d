package sqlite

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// openFails checks that Open(path) fails with an error that names path and
// contains want.
func openFails(t *testing.T, path, want string) {
	t.Helper()
	d, err := Open(path)
	if err == nil {
		_ = d.Close()
		t.Fatalf("Open(%q) succeeded; want an error", path)
	}
	t.Logf("Open(%q): %v", path, err)
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open(%q) error %q; want it to name the path and say %q", path, err, want)
	}
}

func TestOpenRejectsBadPaths(t *testing.T) {
	dir := t.TempDir()

	t.Run("empty", func(t *testing.T) {
		if _, err := Open(""); err == nil || !strings.Contains(err.Error(), "empty path") {
			t.Fatalf("Open(\"\") = %v; want an empty path error", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		openFails(t, dir, "is a directory")
	})
	t.Run("missing parent", func(t *testing.T) {
		openFails(t, filepath.Join(dir, "no", "such", "locks.db"), "parent directory")
	})
	t.Run("parent is a file", func(t *testing.T) {
		file := filepath.Join(dir, "plain")
		if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		openFails(t, filepath.Join(file, "locks.db"), "not a directory")
	})
	t.Run("fifo", func(t *testing.T) {
		fifo := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		openFails(t, fifo, "not a regular file")
	})
	t.Run("directory that refuses new files", func(t *testing.T) {
		// The tests run as root, which permission bits do not stop; the
		// kernel's procfs refuses to create files for root too.
		openFails(t, "/proc/zerotal-locks.db", "unable to open")
	})
}

func TestOpenRejectsCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "garbage.db")
	garbage := []byte(strings.Repeat("this is not a SQLite database. ", 200))
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	openFails(t, path, "not a database")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != string(garbage) {
		t.Fatalf("Open changed the corrupt file it rejected (err %v)", err)
	}
}

func TestOpenRejectsDamagedDatabase(t *testing.T) {
	d, path := openFile(t)
	for i := range 200 {
		mustAcquire(t, d, strings.Repeat("k", 500)+string(rune('a'+i%26))+string(rune('a'+i/26)), newOwner(t), time.Minute)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// Fold the WAL into the file so the damage below is not repaired by it.
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Keep the 100-byte header (so SQLite recognises the file) and scribble
	// over the b-tree pages after the first.
	const pageSize = 4096
	if _, err := f.WriteAt([]byte(strings.Repeat("\xff", 3*pageSize)), pageSize); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	d2, err := Open(path)
	if err == nil {
		_ = d2.Close()
		t.Fatal("Open of a damaged database succeeded")
	}
	t.Logf("Open(%q): %v", path, err)
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q does not name the path", err)
	}
}

func TestOpenRejectsForeignTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "app.db")
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec("CREATE TABLE zerotal_lock (name TEXT)"); err != nil {
		t.Fatal(err)
	}
	if err := raw.Close(); err != nil {
		t.Fatal(err)
	}
	openFails(t, path, "another program")
}

func TestOpenSharesExistingDatabaseAndKeepsLocks(t *testing.T) {
	first, path := openFile(t)
	owner := newOwner(t)
	token := mustAcquire(t, first, "k", owner, time.Minute)
	// A failed Open elsewhere must not disturb the open database.
	if _, err := Open(filepath.Dir(path)); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
	second := openPath(t, path)
	h, held, err := second.Inspect(testContext(t), "k")
	if err != nil || !held || h.Owner != owner || h.Token != token {
		t.Fatalf("second driver sees %+v, %v, %v; want the first driver's lock", h, held, err)
	}
}

func TestOpenUsesWAL(t *testing.T) {
	d, _ := openFile(t)
	var mode string
	if err := d.db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q, %v; want wal", mode, err)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir?with#odd%chars")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "locks.db")
	d := openPath(t, path)
	mustAcquire(t, d, "k", newOwner(t), time.Minute)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not created at the given path: %v", err)
	}
}
