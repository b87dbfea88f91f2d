package sqlite

import (
	"path/filepath"
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// TestConformance runs the kit against one database file that every instance
// opens separately, as separate processes of a host would; the crash test's
// child process opens it too.
func TestConformance(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conformance.db")
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver { return openPath(t, path) },
		ChildEnv: func(testing.TB) []string {
			return []string{conformanceDBEnv + "=" + path}
		},
	})
}
