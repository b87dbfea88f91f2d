// Package memory is the in-process lock driver: locks live in a [Table] in
// this process's memory, so they coordinate goroutines of one process and
// nothing beyond it.
//
// Every Manager opened with driver "memory" shares the process-wide table
// ([Shared]); [New] gives a private table, which is what a test wants when it
// must not see other tests' locks. A table can have many driver handles
// ([Table.Driver]); closing a handle ends only that handle.
//
// Besides the five methods of driver.Driver, a [Driver] implements
// driver.Extender, driver.Fencer, driver.Waiter and driver.Inspector:
//
//   - TTLs run on the monotonic clock, so a wall-clock step never frees or
//     extends a lock. Holder times are reported as wall-clock values derived
//     from the table's creation time plus monotonic offsets.
//   - Fencing tokens come from one counter per table. A table-wide counter
//     makes tokens increase per key across release and expiry without the
//     table remembering keys that are no longer held.
//   - AcquireWait queues callers per key and hands the key directly to the
//     head of the queue on release, force release or expiry, in strict FIFO
//     order and without polling. While a key has waiters it is never free, so
//     a plain Acquire cannot overtake them.
//   - Memory follows the live locks: a released key leaves the table at once
//     (only the most recently freed entry stays, parked for a quick re-take),
//     expired keys are reaped from a min-heap ordered by expiry on every
//     operation, and a table that once held many keys shrinks again.
package memory
