package memory_test

import (
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
)

// TestConformance holds the driver to the whole contract. Every instance is a
// handle on one table, which is what makes them contend; the table does not
// span processes, so the kit's killed-process crash test does not apply.
func TestConformance(t *testing.T) {
	table := memory.NewTable()
	conformance.Run(t, conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			d := table.Driver()
			t.Cleanup(func() { d.Close() })
			return d
		},
	})
}
