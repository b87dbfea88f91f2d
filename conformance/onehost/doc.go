// Package onehost checks and measures the cross-process waiting of a
// one-host driver that queues with driver/waitq (sqlite, file): the same
// children, tests and benchmark for each, so that the drivers compare alike.
//
// A driver's test package builds a Suite, calls Child first thing in its
// TestMain, and calls the Suite's methods from its tests and benchmarks:
//
//	var oneHost = onehost.Suite{Open: ..., Store: ..., Rooms: ...}
//	func TestFairAcrossProcesses(t *testing.T) { oneHost.Fair(t) }
//
// The children are the test binary re-executed; they wait in the engine's
// Block, so that what is measured and tested is what a program sees.
package onehost
