// Package waitq is a first-come, first-served wait queue for one lock key,
// shared by every process of a host through a directory (its "room"), for the
// one-host drivers (sqlite, file) that implement driver.Waiter with it.
//
// # Why a directory of tickets
//
// The lock itself lives in the driver's store (a SQLite row, a lock
// directory); the queue only orders the waiters and wakes them. Each waiter
// puts a ticket in the room, a file named by a sequence number one above the
// highest in the room, and keeps it flock(LOCK_EX)-ed while it waits. The
// waiter whose ticket comes first is the head; only the head tries to take
// the key, so waiters are served in the order they queued, and a waiter that
// releases the key and waits again queues behind the others.
//
// A ticket's lock is its liveness: the kernel drops it when its process dies,
// however it dies, so anyone who can take a shared lock on a ticket
// (LOCK_SH|LOCK_NB) knows its owner is gone and removes it. That holds
// across pid namespaces and needs no pid or start time, and a dead waiter
// never holds up the ones behind it.
//
// # Why inotify for the wake-up
//
// A waiter must wake when the holder releases, when a holder dies, and when a
// ticket ahead of it leaves. A blocking flock(2) would give the first two,
// but it cannot be cancelled (closing the descriptor does not wake it, and
// Go restarts it after signals), so a cancelled wait would leave a thread
// blocked until the key frees. inotify reports every close of a file opened
// for writing in the room, including the closes the kernel does when a
// process dies, and its descriptor goes through Go's poller, so a wait ends
// at once when its context does. The holder keeps the room's "held" file
// open for writing while it holds (when the room exists as it acquires), and
// a release closes it or, if it was not kept, opens and closes it: either
// way the head gets IN_CLOSE_WRITE and tries at once. Tickets are opened for
// writing too, so a waiter that dies wakes the ones behind it.
//
// Events are hints: the head tries again at least every [Poll] (a lease that
// ran out sends no event) and whoever cannot watch (no inotify: other
// systems, or the per-user limit of inotify instances reached) polls at that
// rate, keeping the queue's order. Without flock (not Unix) there is no
// queue: Wait polls.
package waitq
