//go:build !unix

package conformance_test

import (
	"errors"

	"github.com/zerotal/lock/driver"
)

// openChildDriver exists for TestMain: without flock, the test-only file
// driver and the cross-process test it serves are unix-only.
func openChildDriver() (driver.Driver, error) {
	return nil, errors.New("the cross-process test driver needs flock (unix)")
}
