package redis

import "slices"

// The suffixes of a lock's queue keys: each is the lock key followed by one
// of these, so all start with the same hash tag. The scripts derive them
// (QUEUE and WAITERS in lua/constants.lua).
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
func redisKeys(key string) lockKeys {
	lock := string(appendLockKey(nil, key))
	return lockKeys{lock: lock, queue: lock + queueSuffix, waiters: lock + waitersSuffix}
}

// appendLockKey appends key's lock key to b.
func appendLockKey(b []byte, key string) []byte {
	escaped := 0
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '%', '{', '}':
			escaped++
		}
	}
	b = slices.Grow(b, len(key)+2*escaped+3)
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
