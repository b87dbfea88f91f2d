package redis

// scriptCall is the command of one script call together with the values it
// points to, in one allocation. go-redis writes *string and *int64 arguments
// as it writes strings and integers, and a pointer goes into an interface
// without being copied to the heap, so a call allocates this struct and its
// keys' bytes rather than one box per argument.
type scriptCall struct {
	cmd   [12]any
	keys  lockKeys
	owner string
	ttl   int64
}

// newCall returns a call on key's Redis keys for owner.
func newCall(key, owner string) *scriptCall {
	return &scriptCall{keys: redisKeys(key), owner: owner}
}

// withLock returns the start of a command on the lock key alone: the slots
// for the command name and script, numkeys and the key. Append the
// arguments to it; they fit in the array, so appending does not allocate.
func (c *scriptCall) withLock() []any {
	c.cmd[2], c.cmd[3] = 1, &c.keys.lock
	return c.cmd[:4]
}

// withAllKeys is withLock for scripts that may touch the queue: numkeys and
// the four keys in the order the scripts take them.
func (c *scriptCall) withAllKeys() []any {
	c.cmd[2] = 4
	c.cmd[3], c.cmd[4], c.cmd[5], c.cmd[6] = &c.keys.lock, &c.keys.fence, &c.keys.queue, &c.keys.waiters
	return c.cmd[:7]
}
