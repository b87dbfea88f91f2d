package file_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/zerotal/lock/drivers/file"
	lock "github.com/zerotal/lock/sdk/go"
)

// The driver registers itself: lock.Open reaches it by name, with
// Config.File, and by URL, absolute and relative; bad URLs are invalid
// arguments naming Config.URL.
func TestLockOpensTheDriverByNameAndURL(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, cfg := range []lock.Config{
		{Driver: "file", File: lock.FileConfig{Dir: filepath.Join(dir, "by name")}},
		{URL: "file://" + filepath.ToSlash(filepath.Join(dir, "by url"))},
		{URL: "file:relative%20dir"},
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
	for _, name := range []string{"by name", "by url", "relative dir"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || !fi.IsDir() {
			t.Errorf("the lock directory %q was not made where the config said: %v", name, err)
		}
	}
	for _, raw := range []string{"file://host/dir", "file:", "file:dir?mode=0777"} {
		_, err := lock.Open(lock.Config{URL: raw})
		var iae *lock.InvalidArgumentError
		if !errors.As(err, &iae) || iae.Field != "Config.URL" {
			t.Errorf("Open(URL %q) = %v; want an invalid Config.URL", raw, err)
		}
	}
}
