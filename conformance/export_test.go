package conformance

import "time"

// SetTimeouts shortens the subtest context and the watchdog's grace, so that
// the kit's tests of hanging drivers finish quickly. Call it before Run.
func SetTimeouts(subtest, grace time.Duration) { subtestTimeout, hangGrace = subtest, grace }
