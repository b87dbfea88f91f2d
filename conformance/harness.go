package conformance

import (
	"testing"
	"time"

	"github.com/zerotal/lock/driver"
)

// defaultExpirySlack is the lateness Run allows when Harness.ExpirySlack is 0:
// enough for a backend that reaps expired keys on a short timer, and for a
// loaded CI machine.
const defaultExpirySlack = 250 * time.Millisecond

// Harness tells Run how to reach the backend under test.
type Harness struct {
	// New returns a fresh driver instance on the backend under test. All
	// instances from one Harness share one backend, so they contend with
	// each other. Register cleanup with t.Cleanup.
	New func(t testing.TB) driver.Driver

	// ChildEnv, when non-nil, says the backend spans OS processes. The crash
	// test then re-executes the test binary (os.Args[0], -test.run=^$) with
	// these extra environment variables plus the kit's own, and the child,
	// through Child called at the top of the package's TestMain, opens the
	// backend with the open function given to Child, takes the lock and waits
	// to be killed with SIGKILL.
	ChildEnv func(t testing.TB) []string

	// ExpirySlack is how much later than its TTL a backend may let a key go
	// (server clock granularity, polling); 0 means 250ms.
	ExpirySlack time.Duration
}

// slack is the ExpirySlack Run applies.
func (h Harness) slack() time.Duration {
	if h.ExpirySlack > 0 {
		return h.ExpirySlack
	}
	return defaultExpirySlack
}

// Run holds the driver that h opens to the whole driver contract, one named
// subtest per promise. Subtests for optional capabilities the driver lacks are
// skipped with a message naming the capability.
func Run(t *testing.T, h Harness) {
	t.Helper()
	if h.New == nil {
		t.Fatal("conformance: Harness.New is nil; it must open a driver instance on the backend under test")
	}
	s := &suite{h: h, slack: h.slack()}
	s.run(t, "Exists", testExists)
	s.run(t, "OwnerGuard", testOwnerGuard)
	s.run(t, "ForceRelease", testForceRelease)
	s.run(t, "Expiry", testExpiry)
	s.run(t, "Refresh", testRefresh)
	s.run(t, "Reacquire", testReacquire)
	s.run(t, "KeyIsolation", testKeyIsolation)
	s.run(t, "Contention", testContention)
	s.run(t, "Fencing", testFencing)
	s.run(t, "Waiter", testWaiter)
	s.run(t, "Notifier", testNotifier)
	s.run(t, "Inspector", testInspector)
	s.run(t, "Crash", testCrash)
	s.run(t, "Close", testClose)
	s.run(t, "Engine", testEngine)
}
