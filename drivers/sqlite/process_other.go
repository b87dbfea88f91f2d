//go:build !linux

package sqlite

// pidScope is empty where the driver cannot read process start times, which
// leaves locks to expire by their TTL only.
func pidScope() string { return "" }

// processStart is 0 (unknown) outside Linux.
func processStart(int) int64 { return 0 }

// holderGone never claims a holder has exited where start times are unknown:
// a reused pid would otherwise be taken for the holder.
func holderGone(int64, int64) bool { return false }
