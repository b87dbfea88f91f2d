package sqlite

import (
	"os"
	"sync"

	"github.com/zerotal/lock/core/driver/process"
)

// process identifies the running process well enough for another process of
// the same host to tell, later, whether it is still alive.
type holderProcess struct {
	pid int
	// start is the process start time in clock ticks since boot; 0 when the
	// platform cannot tell, which disables dead-holder reclaim for this
	// process's locks.
	start int64
	// scope names the pid namespace and boot the pid belongs to; pids are
	// only comparable within one scope. Empty when unknown, which disables
	// reclaim in both directions.
	scope string
	host  string
}

var (
	selfOnce sync.Once
	self     holderProcess
)

// currentProcess returns this process's identity, read once: none of it
// changes while the process runs.
func currentProcess() holderProcess {
	selfOnce.Do(func() {
		host, err := os.Hostname()
		if err != nil {
			host = ""
		}
		pid := os.Getpid()
		self = holderProcess{pid: pid, start: int64(process.StartTime(pid)), scope: process.Scope(), host: host}
	})
	return self
}

// holderGone reports whether the holder recorded as (pid, start) has
// certainly exited. A holder whose start time was not recorded counts as
// alive: its pid alone could have been recycled.
func holderGone(pid, start int64) bool {
	return start > 0 && process.Exited(int(pid), uint64(start))
}
