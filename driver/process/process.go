// Package process tells a driver whether the process that holds a lock on
// this host is still alive, for drivers that record their holders' pids
// (sqlite, file) and free a dead holder's lock before its TTL.
//
// A pid alone is not an identity: pids are recycled. A holder is recorded as
// (pid, start time), within a [Scope] (the boot, the pid namespace and the
// time namespace), and is taken for dead only when the kernel says so for
// certain. Every doubt counts as alive: a wrong "alive" only makes a waiter
// wait for the TTL, a wrong "dead" would break mutual exclusion.
//
// A process is alive while any of its threads is: a program whose main
// thread has exited (pthread_exit) while another thread holds the lock shows
// a zombie thread-group leader, and is still running.
//
// Start times are read from /proc, which shows them relative to the reader's
// time namespace (unshare --boottime): a reader in another time namespace
// would see another start time and take the pid for recycled. The time
// namespace is therefore part of the scope, and holders in another time
// namespace are left to their TTL.
//
// Outside Linux, start times cannot be read: Scope is "", StartTime is 0 and
// Exited is always false, which leaves every lock to its TTL.
package process

import (
	"os"
	"sync"
)

// Identity is this process as a driver records a lock's holder.
type Identity struct {
	PID int
	// Start is the process's start time in clock ticks after boot, as this
	// process's time namespace shows it; 0 when the platform cannot tell,
	// which leaves this process's locks to their TTL.
	Start uint64
	// Scope names the boot, pid namespace and time namespace PID and Start
	// belong to; they are comparable only within one scope. "" when
	// unknown: this process then never judges another's liveness.
	Scope string
	// Host is the host name, "" when unknown.
	Host string
}

// Self returns this process's identity, read once: none of it changes while
// the process runs.
var Self = sync.OnceValue(func() Identity {
	host, err := os.Hostname()
	if err != nil {
		host = ""
	}
	pid := os.Getpid()
	return Identity{PID: pid, Start: StartTime(pid), Scope: Scope(), Host: host}
})
