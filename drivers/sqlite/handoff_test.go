//go:build unix

package sqlite

import (
	"testing"
)

// The cross-process waiting checks and benchmark that the file driver runs
// too: see package conformance/onehost.

func BenchmarkCrossProcessHandoff(b *testing.B)        { oneHost.Handoff(b) }
func TestFairAcrossProcesses(t *testing.T)             { oneHost.Fair(t) }
func TestKilledWaiterDoesNotHoldUpOthers(t *testing.T) { oneHost.KilledWaiter(t) }
func TestCancelledBlockLeavesNothing(t *testing.T)     { oneHost.CancelledBlock(t) }
