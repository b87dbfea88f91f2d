package sqlite_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/zerotal/lock/drivers/sqlite"
	lock "github.com/zerotal/lock/sdk/go"
)

// The driver registers itself: lock.Open reaches it by name, with
// Config.SQLite, and by URL, absolute, relative and in memory; bad URLs are
// invalid arguments naming Config.URL.
func TestLockOpensTheDriverByNameAndURL(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, "by name.db")
	t.Chdir(dir)
	for _, cfg := range []lock.Config{
		{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: abs}},
		{Driver: "sqlite", SQLite: lock.SQLiteConfig{Path: "relative.db"}},
		{Driver: "sqlite"}, // :memory:
		{URL: "sqlite://" + filepath.ToSlash(abs)},
		{URL: "sqlite:relative%20too.db"},
		{URL: "sqlite::memory:"},
	} {
		m, err := lock.Open(cfg)
		if err != nil {
			t.Fatalf("Open(%+v) = %v", cfg, err)
		}
		if err := m.Try(context.Background(), "k", time.Minute, func(context.Context) error { return nil }); err != nil {
			t.Errorf("Try on %+v = %v", cfg, err)
		}
		if err := m.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	}
	for _, name := range []string{"by name.db", "relative.db", "relative too.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("the database %q was not created where the URL said: %v", name, err)
		}
	}
	for _, raw := range []string{"sqlite://host/x.db", "sqlite:", "sqlite:x.db?journal=off", "sqlite:///x.db?cache=1&cache=2"} {
		_, err := lock.Open(lock.Config{URL: raw})
		var iae *lock.InvalidArgumentError
		if !errors.As(err, &iae) || iae.Field != "Config.URL" {
			t.Errorf("Open(URL %q) = %v; want an invalid Config.URL", raw, err)
		}
	}
}
