package postgres

import (
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// TestConformance runs the whole kit against the shared server, in a schema
// of its own, the crash test's child included.
func TestConformance(t *testing.T) {
	url := sharedURL(t)
	table := testTable(t, url)
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			return openDriver(t, url, table)
		},
		ChildEnv: func(testing.TB) []string {
			return []string{childURLEnv + "=" + url, childTableEnv + "=" + table}
		},
	})
}
