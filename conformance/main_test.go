package conformance_test

import (
	"testing"

	"github.com/zerotal/lock/conformance"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The kit's crash test re-executes this binary: as its child, this
	// process takes a lock on the file driver and never returns from here.
	conformance.Child(openChildDriver)
	goleak.VerifyTestMain(m)
}
