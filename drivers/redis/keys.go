package redis

import "slices"

// The suffixes of a lock's queue keys: each is the lock key followed by one
// of these, so all start with the same hash tag.
const (
	queueSuffix   = ":q" // the list of waiting owners
	waitersSuffix = ":w" // the hash of waiter records
)

// lockKeys are the Redis keys of one lock, in the order the scripts take them
// (see scripts.go).
type lockKeys struct {
	lock, queue, waiters string
}

// redisKeys maps an engine key (prefix included) to the Redis keys a lock
// uses.
//
// Redis Cluster places a key by its hash tag: the bytes between the first '{'
// and the first '}' after it, or the whole key when that span is empty. The
// lock key is "{" + escaped key + "}" and the others add a suffix, so their
// hash tag is the escaped key and a script touching them all never crosses
// slots. The escaping keeps that true for any key: '}' inside the key would
// end the tag early (and a leading '}' would make it empty, so the keys would
// hash differently), and '%' is escaped so that the mapping stays one-to-one.
// Keys without '%', '{' or '}', which is nearly all of them, are stored as
// they are, so they stay readable in redis-cli.
//
// Every lock key ends in '}' and every other key in a suffix that does not,
// so no key of one engine key is a key of another.
//
// The engine never passes an empty key, but an empty tag would make Redis
// hash the keys whole, into different slots; the empty key is stored as
// "{%}", a tag no escaped key can be since escaping never leaves a bare '%'.
//
// All three keys come from one allocation, "{k}:q{k}:w": the lock key is a
// prefix of the queue key, and the waiters key follows.
func redisKeys(key string) lockKeys {
	buf, at := appendRedisKeys(nil, key)
	all := string(buf)
	return lockKeys{
		lock:    all[:at.lockEnd],
		queue:   all[:at.waiters],
		waiters: all[at.waiters:],
	}
}

// keyOffsets say where the keys are in the bytes appendRedisKeys appends:
// the lock key is [0:lockEnd], the queue key [0:waiters] and the waiters key
// [waiters:].
type keyOffsets struct{ lockEnd, waiters int }

// appendRedisKeys appends key's Redis keys to dst[:0] as "{k}:q{k}:w" and
// says where each is.
func appendRedisKeys(dst []byte, key string) ([]byte, keyOffsets) {
	escaped := 0
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '%', '{', '}':
			escaped++
		}
	}
	n := len(key) + 2*escaped + 2 // the length of the lock key
	if key == "" {
		n = 3
	}
	b := slices.Grow(dst[:0], 2*n+len(queueSuffix)+len(waitersSuffix))
	b = appendLockKey(b, key, escaped)
	b = append(b, queueSuffix...)
	b = appendLockKey(b, key, escaped)
	b = append(b, waitersSuffix...)
	return b, keyOffsets{lockEnd: n, waiters: n + len(queueSuffix)}
}

// appendLockKey appends key's lock key to b; escaped is the number of bytes
// of key that need escaping.
func appendLockKey(b []byte, key string, escaped int) []byte {
	b = append(b, '{')
	switch {
	case key == "":
		b = append(b, '%')
	case escaped == 0:
		b = append(b, key...)
	default:
		for i := 0; i < len(key); i++ {
			switch c := key[i]; c {
			case '%':
				b = append(b, "%25"...)
			case '{':
				b = append(b, "%7B"...)
			case '}':
				b = append(b, "%7D"...)
			default:
				b = append(b, c)
			}
		}
	}
	return append(b, '}')
}
