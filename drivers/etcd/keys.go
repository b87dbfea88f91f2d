package etcd

import (
	"crypto/rand"
	"encoding/hex"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// queueSeparator ends a lock key's name inside the names of its queue keys.
// The engine never passes a key with a NUL (and the driver refuses one), so
// no lock key contains it: the queue of key k is exactly the keys that start
// with prefix+k+"\x00", and neither another key's lock nor another key's
// queue can fall in that range.
const queueSeparator = "\x00"

// lockKeys are the etcd keys of one engine key.
//
//	lock   prefix + k            held while it exists; its lease is the
//	                             acquisition's, its value names the holder
//	queue  prefix + k + "\x00"   the start of the wait queue: a waiter is
//	                             the key queue + a random id, on its
//	                             Driver's waiter lease, and waiters are
//	                             served in the order of their keys'
//	                             create revisions
type lockKeys struct {
	lock     string
	queue    string // the queue keys' common prefix
	queueEnd string // the end of the queue's range: queue with its last byte incremented
}

// keysFor returns key's etcd keys under prefix.
func keysFor(prefix, key string) lockKeys {
	lock := prefix + key
	queue := lock + queueSeparator
	return lockKeys{
		lock:     lock,
		queue:    queue,
		queueEnd: clientv3.GetPrefixRangeEnd(queue),
	}
}

// randomID returns 64 random bits in hex, to name a waiter's queue key.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails since Go 1.24
	return hex.EncodeToString(b[:])
}
