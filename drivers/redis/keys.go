package redis

import "strings"

// fenceSuffix names a lock's fencing counter: the counter key is the lock key
// followed by this suffix, so both start with the same hash tag.
const fenceSuffix = ":fence"

// redisKeys maps an engine key (prefix included) to the two Redis keys a lock
// uses: the string that holds the lock and the counter that mints its fencing
// tokens.
//
// Redis Cluster places a key by its hash tag: the bytes between the first '{'
// and the first '}' after it, or the whole key when that span is empty. Both
// keys are built as "{" + escaped key + "}" (plus fenceSuffix for the
// counter), so their hash tag is the escaped key and a script touching both
// never crosses slots. The escaping keeps that true for any key: '}' inside
// the key would end the tag early (and a leading '}' would make it empty, so
// the two keys would hash differently), and '%' is escaped so that the
// mapping stays one-to-one. Keys without '%', '{' or '}', which is nearly all
// of them, are stored as they are, so they stay readable in redis-cli.
//
// The counter key ends in fenceSuffix and every lock key ends in '}', so no
// lock key of one engine key is the counter key of another.
//
// The engine never passes an empty key, but an empty tag would make Redis
// hash the two keys whole, into different slots; the empty key is stored as
// "{%}", a tag no escaped key can be since escaping never leaves a bare '%'.
//
// Both keys come from one allocation: lock is a prefix of fence.
func redisKeys(key string) (lock, fence string) {
	escaped := 0
	for i := 0; i < len(key); i++ {
		switch key[i] {
		case '%', '{', '}':
			escaped++
		}
	}
	var b strings.Builder
	b.Grow(len(key) + 2*escaped + 2 + len(fenceSuffix))
	b.WriteByte('{')
	if key == "" {
		b.WriteByte('%')
	} else if escaped == 0 {
		b.WriteString(key)
	} else {
		for i := 0; i < len(key); i++ {
			switch c := key[i]; c {
			case '%':
				b.WriteString("%25")
			case '{':
				b.WriteString("%7B")
			case '}':
				b.WriteString("%7D")
			default:
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('}')
	b.WriteString(fenceSuffix)
	fence = b.String()
	return fence[:len(fence)-len(fenceSuffix)], fence
}
