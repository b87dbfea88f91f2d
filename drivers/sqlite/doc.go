// Package sqlite is a zerotal lock driver that keeps locks in a SQLite
// database, through modernc.org/sqlite (pure Go, no cgo).
//
// A database file coordinates every process on one host that opens it; the
// path ":memory:" gives a database private to one [Driver], which behaves like
// the memory driver. SQLite over a network filesystem is not supported: its
// file locks are unreliable there, and the dead-holder check below only makes
// sense for processes of one host.
//
// Every state change is one SQL statement, so it is atomic at the database:
// acquire is a single UPSERT that takes a free, expired or dead holder's row
// and bumps its fencing token; release, extend and force release are single
// guarded UPDATEs. A busy database (SQLITE_BUSY) is retried with a jittered
// backoff for as long as the caller's context allows.
//
// TTLs are measured against the host's wall clock, in Unix nanoseconds, which
// all processes of the host share: SQLite has no clock of its own. A step of
// the wall clock (an administrator or NTP setting the time) shortens a lease
// when the clock jumps forward and lengthens it when it jumps back.
//
// Fencing tokens are kept per key in the key's row, which a release keeps
// (it clears the owner and leaves the token), so tokens only increase across
// release, expiry, process restarts and power loss, for as long as the
// database file lives. The database runs with synchronous=NORMAL: commits
// are not synced one by one, and a power loss may forget the last of them.
// Tokens keep their promise anyway because each is an epoch, synced once per
// Driver, times 2^24 plus a count (see epoch.go). The price is one small row
// per key ever locked, and one fsync per Driver.
//
// On Linux, each lock records its holder's pid and the process start time
// (field 22 of /proc/<pid>/stat). A caller in the same pid namespace of the
// same boot may take at once a lock whose holder has exited, without waiting
// for its TTL; a pid that was reused by another process has a different start
// time, so it is never mistaken for the holder. Holders on other hosts (or in
// other containers) are reclaimed only by TTL.
package sqlite
