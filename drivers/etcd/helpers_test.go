package etcd

import (
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"
)

// openDriver returns a Driver made by Open on url, closed at cleanup.
func openDriver(t testing.TB, url string, opts ...Option) *Driver {
	t.Helper()
	d, err := Open(url, opts...)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// testKey returns a key under a random prefix, so that no two tests, and no
// two runs, share keys.
func testKey(t testing.TB, name string) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "test:" + hex.EncodeToString(b[:]) + ":" + name
}

// newOwner returns an owner token of the engine's shape: 32 lowercase hex
// digits.
func newOwner() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// waitUntil polls cond every few milliseconds until it is true or timeout
// passes, and reports whether it became true.
func waitUntil(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}
