package file

import (
	"errors"
	"os"
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// conformanceDirEnv tells the conformance kit's crash child which lock
// directory to open: the parent's.
const conformanceDirEnv = "FILELOCK_CONFORMANCE_DIR"

// openConformanceChild opens the crash child's driver; see TestMain.
func openConformanceChild() (driver.Driver, error) {
	dir := os.Getenv(conformanceDirEnv)
	if dir == "" {
		return nil, errors.New(conformanceDirEnv + " is not set")
	}
	return Open(dir)
}

// TestConformance runs the whole driver contract against one real lock
// directory: every instance is a separate Open of it, and the crash test's
// killed holder is a real process using it too.
func TestConformance(t *testing.T) {
	dir := t.TempDir()
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			return openDriver(t, dir)
		},
		ChildEnv: func(testing.TB) []string {
			return []string{conformanceDirEnv + "=" + dir}
		},
	})
	wantNoPending(t, dir)
}
