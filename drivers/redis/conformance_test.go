package redis

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/core/driver"
)

// childURLEnv carries the private server's URL to the crash test's child
// process, so that the child holds its lock on the same server.
const childURLEnv = "ZEROTAL_REDIS_TEST_URL"

func TestMain(m *testing.M) {
	if os.Getenv(waitChildURLEnv) != "" {
		runWaitChild()
	}
	conformance.Child(func() (driver.Driver, error) {
		url := os.Getenv(childURLEnv)
		if url == "" {
			// Open("") would fall back to $REDIS_URL, which may be a
			// shared server: the child must only touch the private one.
			return nil, os.ErrNotExist
		}
		return Open(url)
	})
	goleak.VerifyTestMain(m)
}

func TestConformance(t *testing.T) {
	s := startServer(t)
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			return s.open(t)
		},
		ChildEnv: func(testing.TB) []string {
			return []string{childURLEnv + "=" + s.url()}
		},
	})
}
