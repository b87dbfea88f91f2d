package file

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs this binary as a child process when a test re-executed it
// for one, and otherwise runs the tests and fails the run if any goroutine
// outlives them.
func TestMain(m *testing.M) {
	if mode := os.Getenv(childModeEnv); mode != "" {
		os.Exit(runChild(mode))
	}
	goleak.VerifyTestMain(m)
}
