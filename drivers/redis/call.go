package redis

import "sync"

// scriptCall is the command of one script call together with the values it
// points to, in one allocation. go-redis writes *string and *int64
// arguments as it writes strings and integers, and encoding.BinaryMarshaler
// ones (keyArg) by the bytes they return (and routes by keyArg's String); a pointer goes into an interface
// without being copied to the heap, so a call needs no box per argument.
// The calls of Acquire, Release and the other one-shot operations come from
// callPool, so that they allocate nothing of their own.
type scriptCall struct {
	cmd   [12]any
	buf   []byte // the lock key's bytes
	key   keyArg // the lock key: buf
	owner string
	ttl   int64
	// abandoned is set when the caller stopped waiting for a command that
	// may still be sent (shared round trips, see scriptRunner.do): its
	// arguments point into this call, so it is never used again, nor
	// pooled.
	abandoned bool
}

// keyArg is a Redis key as bytes that go-redis writes without copying them
// into a string.
type keyArg []byte

// MarshalBinary returns the key's bytes as they are.
func (k *keyArg) MarshalBinary() ([]byte, error) { return *k, nil }

// String returns the key as a string. go-redis routes a command by its first
// key as a string (a ClusterClient hashes it to a slot, a Ring to a shard),
// and reads an argument that is not one with fmt.Sprint: without this the
// key would read as "&[123 ...]" and lose its hash tag.
func (k *keyArg) String() string { return string(*k) }

// callPool recycles scriptCalls, whose key buffer then needs no allocation
// either.
var callPool = sync.Pool{New: func() any { return new(scriptCall) }}

// maxPooledKeyBytes bounds the key buffer a pooled call keeps, so that one
// call on a huge key does not pin its buffer in the pool.
const maxPooledKeyBytes = 4 << 10

// getCall returns a pooled call on key's Redis keys for owner. Give it back
// with put once the reply has been read: go-redis keeps no reference to a
// command's arguments after the call returns.
func getCall(key, owner string) *scriptCall {
	c := callPool.Get().(*scriptCall)
	c.set(key, owner)
	return c
}

// newCall returns a call that is not pooled, for a wait, whose call lives as
// long as the wait and may be handed to a background leave.
func newCall(key, owner string) *scriptCall {
	c := new(scriptCall)
	c.set(key, owner)
	return c
}

// set points c at key's lock key and owner.
func (c *scriptCall) set(key, owner string) {
	c.buf = appendLockKey(c.buf[:0], key)
	c.key = c.buf
	c.owner = owner
}

// put returns a call from getCall to the pool, unless it was abandoned.
func (c *scriptCall) put() {
	if c.abandoned {
		return
	}
	c.cmd = [12]any{}
	c.key = nil
	c.owner = ""
	if cap(c.buf) > maxPooledKeyBytes {
		c.buf = nil
	}
	callPool.Put(c)
}

// usable returns c, or a copy of it when c was abandoned, for the next
// command on the same lock and owner.
func (c *scriptCall) usable() *scriptCall {
	if !c.abandoned {
		return c
	}
	n := &scriptCall{buf: append([]byte(nil), c.buf...), owner: c.owner, ttl: c.ttl}
	n.key = n.buf
	return n
}

// lockKey returns the lock's Redis key as a string.
func (c *scriptCall) lockKey() string { return string(c.key) }

// withLock returns the start of a script call: the slots for the command
// name and the function or script, numkeys and the lock key, the only key
// every script names (the queue's keys share its hash tag, and the scripts
// derive them: see lua/constants.lua). Append the arguments to it; they fit
// in the array, so appending does not allocate.
func (c *scriptCall) withLock() []any {
	c.cmd[2], c.cmd[3] = 1, &c.key
	return c.cmd[:4]
}
