package memory_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine, such as a hand-off timer's
// callback or a waiter, outlives the tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
