// Package process tells a driver whether the process that holds a lock on
// this host is still alive, for drivers that record their holders' pids
// (sqlite, file) and free a dead holder's lock before its TTL.
//
// A pid alone is not an identity: pids are recycled. A holder is recorded as
// (pid, start time), within a [Scope] (the boot and the pid namespace), and
// is taken for dead only when the kernel says so for certain. Every doubt
// counts as alive: a wrong "alive" only makes a waiter wait for the TTL, a
// wrong "dead" would break mutual exclusion.
//
// Outside Linux, start times cannot be read: Scope is "", StartTime is 0 and
// Exited is always false, which leaves every lock to its TTL.
package process
