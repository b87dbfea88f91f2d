package lock

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any test leaves a goroutine behind: every
// Manager a test opens must stop its refreshers and driver on Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
