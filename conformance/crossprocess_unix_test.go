//go:build unix

package conformance_test

import (
	"errors"
	"os"
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// envFileDir names the file driver's directory for a crash-test child.
const envFileDir = "CONFORMANCE_TEST_FILE_DIR"

// openChildDriver opens, in a crash-test child, the file driver whose
// directory the parent named.
func openChildDriver() (driver.Driver, error) {
	dir := os.Getenv(envFileDir)
	if dir == "" {
		return nil, errors.New(envFileDir + " is not set")
	}
	return newFileDriver(dir), nil
}

// newFileDriver opens the file driver on dir, with a TTL that never runs out
// when TestBrokenDrivers asks for that bug.
func newFileDriver(dir string) *fileDriver {
	return &fileDriver{dir: dir, neverExpires: bug(os.Getenv(envBug)) == bugTTLNeverExpires}
}

// TestCrossProcess runs the kit on a backend that spans processes, so that
// the crash test kills a real holder process.
func TestCrossProcess(t *testing.T) {
	dir := t.TempDir()
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			d := newFileDriver(dir)
			t.Cleanup(func() { d.Close() })
			return d
		},
		ChildEnv: func(testing.TB) []string { return []string{envFileDir + "=" + dir} },
	})
}
