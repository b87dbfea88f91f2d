package postgres

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// The crash test's child process opens the same table as its parent: the
// parent passes both through the environment.
const (
	childURLEnv   = "ZEROTAL_POSTGRES_TEST_URL"
	childTableEnv = "ZEROTAL_POSTGRES_TEST_TABLE"
)

func TestMain(m *testing.M) {
	if os.Getenv(waitChildEnv) != "" {
		runWaitChild()
	}
	conformance.Child(func() (driver.Driver, error) {
		url, table := os.Getenv(childURLEnv), os.Getenv(childTableEnv)
		if url == "" || table == "" {
			// Never fall back to a default table: the child must only
			// touch its parent's.
			return nil, os.ErrNotExist
		}
		return Open(url, WithTable(table))
	})
	goleak.VerifyTestMain(m)
}
