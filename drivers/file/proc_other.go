//go:build !linux

package file

// pidScope returns "" off Linux: without /proc there is no start time to tell
// a recycled pid from the holder, so this process judges holders by lease
// expiry only.
func pidScope() string { return "" }

// processStart returns 0: the start time is unknown off Linux.
func processStart(int) uint64 { return 0 }

// processGone never reports a holder dead off Linux; see pidScope.
func processGone(int, uint64) bool { return false }
