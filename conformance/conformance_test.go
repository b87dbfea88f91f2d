package conformance_test

import (
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/conformance"
	"github.com/zerotal/lock/driver"
)

// envBug names the bug TestBrokenDriverChild builds the reference driver with.
const envBug = "CONFORMANCE_TEST_BUG"

// refHarness opens instances of one shared reference backend built with b.
func refHarness(b bug) conformance.Harness {
	backend := newRefBackend(b)
	return conformance.Harness{
		New: func(t testing.TB) driver.Driver {
			d := backend.open()
			t.Cleanup(func() { d.Close() })
			return d
		},
	}
}

// TestReferenceDriver proves the kit passes a correct driver that has every
// optional capability.
func TestReferenceDriver(t *testing.T) {
	conformance.Run(t, refHarness(bugNone))
}

// brokenDrivers pairs each deliberately broken driver with a subtest of Run
// that must catch it. Most are the reference driver, run by
// TestBrokenDriverChild; the file driver with a TTL that never runs out
// proves that the crash test catches a killed process's lock that never
// frees.
var brokenDrivers = []struct {
	test     string // the test that runs the kit on the broken driver
	bug      bug
	caughtBy string // the subtest of Run that must fail
	hangs    bool   // the watchdog must end the run, naming the subtest
}{
	{"TestBrokenDriverChild", bugReleaseUnguarded, "OwnerGuard/NonOwnerRelease", false},
	{"TestBrokenDriverChild", bugTTLNeverExpires, "Expiry/HeldUntilTTL", false},
	{"TestBrokenDriverChild", bugAcquireNotAtomic, "Contention", false},
	{"TestBrokenDriverChild", bugExtendAnyOwner, "Refresh/NonOwner", false},
	{"TestBrokenDriverChild", bugExtendTakesFree, "Refresh/ExtendNeverTakesFree", false},
	{"TestBrokenDriverChild", bugExistsIgnoresExpiry, "Exists/Expired", false},
	{"TestBrokenDriverChild", bugTokensRepeat, "Fencing/AcrossRelease", false},
	{"TestBrokenDriverChild", bugReacquireKeepsTTL, "Reacquire/ResetsTTL", false},
	{"TestBrokenDriverChild", bugReacquireNewToken, "Reacquire/KeepsToken", false},
	{"TestBrokenDriverChild", bugTTLInSeconds, "Expiry/1ms", false},
	{"TestBrokenDriverChild", bugKeysFoldCase, "KeyIsolation", false},
	{"TestBrokenDriverChild", bugKeysTruncated, "KeyIsolation", false},
	{"TestBrokenDriverChild", bugWaitersLIFO, "Waiter/FIFO", false},
	{"TestBrokenDriverChild", bugCloseIgnored, "Close/MethodsFail", false},
	{"TestBrokenDriverChild", bugExistsBlocks, "Exists/NeverTaken", false},
	{"TestBrokenDriverChild", bugExistsHangs, "Exists", true},
	{"TestCrossProcess", bugTTLNeverExpires, "Crash/KilledProcess", false},
}

// TestBrokenDrivers proves the kit fails each deliberately broken driver, in
// the subtest meant to catch it. Each runs the kit in a subprocess, since a
// failing Run fails its test. With -short, a child runs only that subtest.
func TestBrokenDrivers(t *testing.T) {
	for _, c := range brokenDrivers {
		if c.test == "TestCrossProcess" && runtime.GOOS == "windows" {
			continue // the file driver needs flock
		}
		t.Run(c.test+"/"+string(c.bug), func(t *testing.T) {
			t.Parallel()
			pattern := "^" + c.test + "$"
			// A child with shortened timeouts runs only the subtest meant
			// to catch its bug: its watchdog would stop a slow sibling
			// (Contention's check under -race) and panic.
			if testing.Short() || c.bug == bugExistsBlocks || c.bug == bugExistsHangs {
				pattern += "/^" + strings.ReplaceAll(c.caughtBy, "/", "$/^") + "$"
			}
			cmd := exec.Command(os.Args[0], "-test.run="+pattern, "-test.count=1")
			cmd.Env = append(os.Environ(), envBug+"="+string(c.bug))
			out, err := cmd.CombinedOutput()
			failed := regexp.MustCompile(`--- FAIL: `+c.test+`/(\S+)`).FindAllStringSubmatch(string(out), -1)
			names := make([]string, len(failed))
			for i, m := range failed {
				names[i] = m[1]
			}
			t.Logf("%s with bug %s failed: %s", c.test, c.bug, strings.Join(names, " "))
			if err == nil {
				t.Fatalf("the kit passed a driver with bug %q, want it to fail in %s\n%s", c.bug, c.caughtBy, out)
			}
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("running the child: %v", err)
			}
			want := "--- FAIL: " + c.test + "/" + c.caughtBy + " ("
			if c.hangs {
				want = "conformance: " + c.test + "/" + c.caughtBy + " still running after"
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("the kit failed a driver with bug %q, but not with %q\n%s", c.bug, want, out)
			}
			if !c.hangs && strings.Contains(string(out), "panic:") {
				t.Errorf("the kit panicked on a driver with bug %q instead of failing cleanly\n%s", c.bug, out)
			}
		})
	}
}

// TestBrokenDriverChild runs the kit on the reference driver built with the
// bug TestBrokenDrivers names in its subprocess's environment.
func TestBrokenDriverChild(t *testing.T) {
	b := bug(os.Getenv(envBug))
	if b == bugNone {
		t.Skip("runs only as a subprocess of TestBrokenDrivers")
	}
	if b == bugExistsBlocks || b == bugExistsHangs {
		conformance.SetTimeouts(time.Second, time.Second)
	}
	conformance.Run(t, refHarness(b))
}
