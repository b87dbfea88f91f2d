package etcd

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// childURLEnv carries the private cluster's URL to child processes (the
// conformance kit's crash test, the dead-waiter test), so that they lock on
// the same cluster.
const childURLEnv = "ZEROTAL_ETCD_TEST_URL"

func TestMain(m *testing.M) {
	if key := os.Getenv(waitChildKeyEnv); key != "" {
		runWaitChild(key)
	}
	conformance.Child(func() (driver.Driver, error) {
		url := os.Getenv(childURLEnv)
		if url == "" {
			// Never fall back to a default cluster: the child must only
			// touch the private one.
			return nil, os.ErrNotExist
		}
		return Open(url)
	})
	goleak.VerifyTestMain(m)
}
