package sqlite

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"path/filepath"
	"testing"
	"time"
)

// newOwner returns a fresh owner token in the engine's format: 32 lowercase
// hex digits.
func newOwner(t testing.TB) string {
	t.Helper()
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// openFile opens a driver on a new database file in a test directory and
// returns it with the file's path.
func openFile(t testing.TB) (*Driver, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "locks.db")
	return openPath(t, path), path
}

// openPath opens a driver on path, closed at the end of the test.
func openPath(t testing.TB, path string) *Driver {
	t.Helper()
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// backends runs fn against a private in-memory database and a file database.
func backends(t *testing.T, fn func(t *testing.T, d *Driver)) {
	t.Run("memory", func(t *testing.T) { fn(t, openPath(t, MemoryPath)) })
	t.Run("file", func(t *testing.T) {
		d, _ := openFile(t)
		fn(t, d)
	})
}

// testContext is a context that ends well after any test step should have.
func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mustAcquire acquires key for owner and fails the test unless it succeeds.
func mustAcquire(t testing.TB, d *Driver, key, owner string, ttl time.Duration) uint64 {
	t.Helper()
	token, ok, err := d.AcquireFenced(testContext(t), key, owner, ttl)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced(%q, %s, %v) = %d, %v, %v; want success", key, owner, ttl, token, ok, err)
	}
	return token
}

// eventually polls cond every few milliseconds until it holds or the
// deadline passes, and reports whether it held.
func eventually(deadline time.Duration, cond func() bool) bool {
	end := time.Now().Add(deadline)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(2 * time.Millisecond)
	}
	return cond()
}
