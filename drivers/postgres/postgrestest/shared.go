package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// SharedURLEnv overrides the URL of the shared server SharedURL returns.
const SharedURLEnv = "ZEROTAL_POSTGRES_URL"

// DefaultSharedURL is the shared test server: trust authentication,
// database test, on the default port (a service the machine runs, never one
// of this package's private servers).
const DefaultSharedURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// SharedURL returns the URL of the shared PostgreSQL server ($SharedURLEnv,
// else DefaultSharedURL), failing t — never skipping — if it does not
// answer. Tests on it touch only schemas of their own (see Table).
func SharedURL(t testing.TB) string {
	t.Helper()
	url := os.Getenv(SharedURLEnv)
	if url == "" {
		url = DefaultSharedURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		err = conn.Ping(ctx)
		_ = conn.Close(ctx)
	}
	if err != nil {
		t.Fatalf("the shared PostgreSQL server at %s does not answer (%v); these tests need it and never skip: "+
			"start PostgreSQL on 127.0.0.1:5432 with trust authentication and a database \"test\", or set $%s", url, err, SharedURLEnv)
	}
	return url
}

// Table returns a lock table name, "schema.locks", in a schema of its own
// (zltest_<random>) on the server at url; the schema and everything in it
// are dropped when t ends. The driver creates them on first use.
func Table(t testing.TB, url string) string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "zltest_" + hex.EncodeToString(b[:])
	t.Cleanup(func() { DropSchema(t, url, schema) })
	return schema + ".locks"
}

// DropSchema drops schema, and everything in it, on the server at url.
func DropSchema(t testing.TB, url, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Errorf("dropping test schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS "`+schema+`" CASCADE`); err != nil {
		t.Errorf("dropping test schema %s: %v", schema, err)
	}
}
