package conformance_test

import (
	"os"
	"testing"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// exampleBackend and openMyDriver stand in for a third-party driver.
var exampleBackend = newRefBackend(bugNone)

func openMyDriver(dsn string) (driver.Driver, error) { return exampleBackend.open(), nil }

// A driver's test package runs the whole kit from one test function. Every
// instance New returns must reach the same backend, so that they contend.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		conformance.Run(t, conformance.Harness{
			New: func(t testing.TB) driver.Driver {
				d, err := openMyDriver(os.Getenv("MYDRIVER_DSN"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			},
		})
	}
	_ = testConformance // in a driver's package: func TestConformance(t *testing.T)
}

// A backend that spans processes also sets Harness.ChildEnv, and its test
// package's TestMain calls Child first: the crash test then re-runs the test
// binary as a child that takes a lock and is killed while holding it.
func ExampleChild() {
	testMain := func(m *testing.M) {
		conformance.Child(func() (driver.Driver, error) {
			return openMyDriver(os.Getenv("MYDRIVER_DSN"))
		})
		os.Exit(m.Run())
	}
	testConformance := func(t *testing.T) {
		dsn := "file:" + t.TempDir() + "/locks.db"
		conformance.Run(t, conformance.Harness{
			New: func(t testing.TB) driver.Driver {
				d, err := openMyDriver(dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { d.Close() })
				return d
			},
			ChildEnv: func(testing.TB) []string { return []string{"MYDRIVER_DSN=" + dsn} },
		})
	}
	_, _ = testMain, testConformance // in a driver's package: TestMain and TestConformance
}
