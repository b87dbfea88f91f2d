package sqlite

import "github.com/zerotal/lock/driver/process"

// holderGone reports whether the holder recorded as (pid, start) has
// certainly exited. A holder whose start time was not recorded counts as
// alive: its pid alone could have been recycled.
func holderGone(pid, start int64) bool {
	return start > 0 && process.Exited(int(pid), uint64(start))
}
