package sqlite

import (
	"os"
	"sync"
)

// process identifies the running process well enough for another process of
// the same host to tell, later, whether it is still alive.
type process struct {
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
	self     process
)

// currentProcess returns this process's identity, read once: none of it
// changes while the process runs.
func currentProcess() process {
	selfOnce.Do(func() {
		host, err := os.Hostname()
		if err != nil {
			host = ""
		}
		pid := os.Getpid()
		self = process{pid: pid, start: processStart(pid), scope: pidScope(), host: host}
	})
	return self
}
