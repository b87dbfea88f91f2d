// Package etcd is the zerotal lock driver for etcd v3: it coordinates
// goroutines, processes and hosts that share one etcd cluster, through
// go.etcd.io/etcd/client/v3.
//
// Open a driver from a URL that lists the cluster's members, or wrap a
// client the application already has with [New]:
//
//	d, err := etcd.Open("etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379")
//
// # Locks, leases and TTLs
//
// A lock is one key, the prefix ([DefaultPrefix] unless [WithPrefix] says
// otherwise) followed by the engine's key, attached to a lease of its own:
// one lease per acquisition, granted with the acquisition's TTL. The server
// deletes the key when the lease expires, so the cluster's leader decides
// when a lock frees, by its own clock; nothing depends on the clients'
// clocks. The key's value names the holder (owner, time taken, pid, host),
// and every Txn that changes a lock is guarded by that owner on the server.
//
// etcd leases are whole seconds and at least the server's minimum TTL,
// ceil(1.5 × election timeout): 2s with etcd's default settings. The driver
// rounds a TTL up to whole seconds and the server raises it to its minimum,
// so the server keeps a lock at least as long as the engine believes it is
// held (the engine counts the TTL asked for from before the request was
// sent), and up to a second or so longer, plus the half second after which
// the leader notices an expired lease. A holder that dies frees its keys
// that much later than its TTL.
//
// # Operations
//
//   - Acquire: one Txn on the acquisition's lease (a reused one, renewed in
//     parallel, or a grant first; see below): if the key is free and nobody
//     is queued, put it on the lease; if owner holds it, move it to the
//     lease (which resets the TTL and keeps the token); else nothing.
//   - Release: one Txn, an owner-guarded delete.
//   - Extend: an owner-guarded read of the key and a renewal of its lease;
//     a TTL longer than the lease's moves the key to a new lease.
//   - ForceRelease: a read and a revocation of the key's lease, which
//     deletes that acquisition's key and nothing else.
//   - Exists: one read. Inspect: a read and the lease's time to live.
//
// A Driver keeps the leases its own releases empty and reuses one for its
// next acquisition with the same TTL while at least half of it is left,
// renewing it in parallel with the acquiring Txn: a loop of acquisitions
// then costs two writes each (acquire, release) and one round trip each
// way, against four writes for grant, acquire, release and revoke. Other
// leases that end up holding nothing (a failed or abandoned acquisition, a
// lease a key moved off) are revoked in the background.
//
// # Fencing tokens
//
// A token is the create revision of the lock key: the revision of the Txn
// that took it. Revisions are the cluster's, global across keys, and only
// increase, across releases, expiries, hand-offs, failovers and restarts (a
// member restarts on its log). Re-acquiring by the same owner keeps the
// token. Restoring a snapshot brings the revision back unless it is
// restored with etcdutl's --bump-revision.
//
// # Waiting in line
//
// The Driver is a driver.Waiter. A waiter that finds the key held puts a
// queue key, prefix + key + "\x00" + a random id, on its Driver's waiter
// lease ([WithWaiterTTL], kept alive while the Driver lives), in the same
// Txn that would have taken a free key. Waiters are served in the order of
// their queue keys' create revisions, like etcd's concurrency.Mutex; a plain
// Acquire of a free key with waiters queued reports contention, and a holder
// that asks again queues behind them.
//
// Each waiter watches the queue key just ahead of its own and, once first,
// the lock key. When the lock key is deleted (release, force release,
// expiry) the first waiter takes it with one Txn that checks that the key
// is free and no queue key is older than its own. Its lock lease was
// granted when it began waiting and kept alive since, so a hand-off is a
// release, a watch event and a Txn. A waiter whose process dies leaves the
// queue when its waiter lease expires; one that gives up leaves in the
// background, and revokes its lock lease, which frees the key if it had
// just taken it.
//
// Watches are opened at the server's current revision and checked against
// the last read, rather than opened at the read's revision + 1: etcd
// delivers the events of a watch that starts in the past only on its next
// catch-up pass, up to 100ms later. A waiter also reads its queue every
// 2s, so that a watch stuck on a member that hangs with its connection
// open does not stall it until gRPC notices.
//
// # Failures
//
// Every operation runs in attempts of at most [WithOpTimeout] (default
// [DefaultOpTimeout]) that require a leader, retried with backoff while the
// caller's context allows: a write in flight when the leader dies is
// neither answered nor retried by the etcd client, and only the driver
// knows that its Txns are safe to repeat (owner-guarded Txns find their own
// effect; lease grants name their lease id). A failover therefore stalls
// calls for about the election plus one attempt timeout. An unreachable or
// failing cluster is an error, never contention.
//
// Mutual exclusion holds across failovers and restarts: etcd commits every
// change to a majority before it answers. A new leader renews every lease
// to its full TTL (unless the cluster runs with lease checkpoints), so a
// failover can extend the life of a lock whose holder has died, never
// shorten one.
package etcd
