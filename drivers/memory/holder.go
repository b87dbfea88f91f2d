package memory

import (
	"os"
	"sync"
)

// processID is read once: Getpid is a system call, and a Go process keeps its
// pid for life.
var processID = os.Getpid()

// hostname is looked up on the first Inspect and then cached, because the
// lookup is a system call and the answer rarely changes while a process runs.
// An unknown hostname is reported as "", which Holder defines as unknown.
var hostname = sync.OnceValue(func() string {
	name, err := os.Hostname()
	if err != nil {
		return ""
	}
	return name
})
