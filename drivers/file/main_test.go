package file

import (
	"os"
	"testing"

	"github.com/zerotal/lock/conformance"
	"go.uber.org/goleak"
)

// TestMain runs this binary as a child process when a test re-executed it
// for one (the conformance kit's crash test, or one of this package's), and
// otherwise runs the tests and fails the run if any goroutine outlives them.
func TestMain(m *testing.M) {
	conformance.Child(openConformanceChild)
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}
