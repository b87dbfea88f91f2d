package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/zerotal/lock/drivers/postgres/postgrestest"
)

// sharedURL is the shared server's URL (postgrestest.SharedURL).
func sharedURL(t testing.TB) string { return postgrestest.SharedURL(t) }

// testTable is a lock table in a schema of its own, dropped when t ends.
func testTable(t testing.TB, url string) string { return postgrestest.Table(t, url) }

// openDriver returns a Driver made by Open on url and table, closed when t
// ends.
func openDriver(t testing.TB, url, table string, opts ...Option) *Driver {
	t.Helper()
	d, err := Open(url, append([]Option{WithTable(table)}, opts...)...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// connect returns a plain connection to url, closed when t ends, for tests
// to look at the tables directly.
func connect(t testing.TB, url string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// testKey returns a key under a random prefix, so that no two tests share
// keys.
func testKey(name string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "zltest:" + hex.EncodeToString(b[:]) + ":" + name
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
