package file

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/conformance/onehost"
	"github.com/zerotal/lock/driver"
	"go.uber.org/goleak"
)

// TestMain runs this binary as a child process when a test re-executed it
// for one (the conformance kit's crash test, or one of this package's), and
// otherwise runs the tests and fails the run if any goroutine outlives them.
func TestMain(m *testing.M) {
	conformance.Child(openConformanceChild)
	onehost.Child(oneHost)
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}

// oneHost reaches a lock directory for the cross-process waiting checks.
var oneHost = onehost.Suite{
	Open:  func(dir string) (driver.Driver, error) { return Open(dir) },
	Store: func(dir string) string { return filepath.Join(dir, "locks") },
	Rooms: func(dir string) string { return filepath.Join(dir, waitsName) },
}
