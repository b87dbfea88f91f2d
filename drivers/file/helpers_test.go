package file

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/driver/process"
)

// newOwner returns a fresh owner token in the engine's format (32 lowercase
// hex digits), unique across processes.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// testCtx returns a context that bounds a test's driver calls.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openDriver opens a driver on dir that is closed when the test ends.
func openDriver(t testing.TB, dir string) *Driver {
	t.Helper()
	d, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%q): %v", dir, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// mustAcquire takes key for owner or fails the test.
func mustAcquire(t testing.TB, d *Driver, key, owner string, ttl time.Duration) {
	t.Helper()
	ok, err := d.Acquire(testCtx(t), key, owner, ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire(%q, %s) = %v, %v; want true, nil", key, owner, ok, err)
	}
}

// wantAcquire checks what Acquire returns.
func wantAcquire(t testing.TB, d *Driver, key, owner string, ttl time.Duration, want bool) {
	t.Helper()
	ok, err := d.Acquire(testCtx(t), key, owner, ttl)
	if err != nil || ok != want {
		t.Fatalf("Acquire(%q, %s) = %v, %v; want %v, nil", key, owner, ok, err, want)
	}
}

// wantExists checks what Exists returns.
func wantExists(t testing.TB, d *Driver, key string, want bool) {
	t.Helper()
	held, err := d.Exists(testCtx(t), key)
	if err != nil || held != want {
		t.Fatalf("Exists(%q) = %v, %v; want %v, nil", key, held, err, want)
	}
}

// eventually polls cond until it holds, failing the test after a deadline
// generous enough for a slow, shared machine.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// entries lists the names in dir, failing the test on error.
func entries(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(des))
	for i, de := range des {
		names[i] = de.Name()
	}
	return names
}

// wantNoPending fails the test if dir holds any pending or sweep directory.
func wantNoPending(t testing.TB, dir string) {
	t.Helper()
	for _, name := range entries(t, dir) {
		if strings.HasPrefix(name, pendingPrefix) || strings.HasPrefix(name, sweepPrefix) {
			t.Errorf("leftover %s in the lock directory", name)
		}
	}
}

// record returns a holder record as another process would have written it.
func record(t testing.TB, r holderRecord) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// localRecord describes a lock taken by this very process, alive.
func localRecord(owner string, expires time.Time) holderRecord {
	me := process.Self()
	return holderRecord{
		Owner: owner, PID: me.PID, PIDStart: me.Start, Host: me.Host, Scope: me.Scope,
		AcquiredAtNS: time.Now().UnixNano(), ExpiresAtNS: expires.UnixNano(),
	}
}

// plantLock creates key's lock directory in dir by hand, with the given
// entries, the way another (possibly crashed or foreign) process would have
// left it.
func plantLock(t testing.TB, dir, key string, files map[string][]byte) string {
	t.Helper()
	path := lockPath(dir, key)
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(path, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// plantHolder plants key's lock held by r, with its lease entry 0.
func plantHolder(t testing.TB, dir, key string, r holderRecord) string {
	t.Helper()
	return plantLock(t, dir, key, map[string][]byte{
		leaseName(0, r.ExpiresAtNS, r.Owner): record(t, r),
	})
}
