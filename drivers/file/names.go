package file

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
)

// File names inside the lock directory. Lock names never start with a dot (the
// readable part keeps only [A-Za-z0-9_-]), so the dot-prefixed names of work
// in progress can never collide with a lock.
const (
	// pendingPrefix names a lock directory being built, before it is renamed
	// onto its lock name. Open also uses one to probe that it can write.
	pendingPrefix = ".pending-"
	// sweepPrefix names an abandoned pending directory that a sweep has
	// claimed (by renaming it) and is deleting.
	sweepPrefix = ".sweep-"
	// leasePrefix starts the name of every lease entry inside a lock
	// directory: "lease.<seq>.<expires unix ns>.<owner>".
	leasePrefix = "lease."
	// readableLen bounds the readable part of a lock name. With the dash and
	// 64 hex digits of SHA-256 a name is at most 129 bytes, far below the
	// 255-byte NAME_MAX of common filesystems.
	readableLen = 64
	// maxOwnerLen bounds an owner token, which becomes part of a file name.
	// The engine's owners are 32 hex digits.
	maxOwnerLen = 64
)

// lockPath returns dir joined with the name of key's lock directory: a
// readable part (the key's first readableLen bytes, every byte outside
// [A-Za-z0-9_-] replaced by '_'), a dash, and the hex SHA-256 of the whole
// key. The hash alone makes names distinct per key, so the readable part may
// be lossy: it is there for the person who lists the directory. A reversible
// escaping would not fit: a 1 KiB key escapes to more than NAME_MAX. The hash
// is lowercase hex, so keys that differ only in case still get different
// names on a case-insensitive filesystem. dir "" gives the bare name.
func lockPath(dir, key string) string {
	sum := sha256.Sum256([]byte(key))
	n := min(len(key), readableLen)
	var b strings.Builder
	b.Grow(len(dir) + 1 + n + 1 + 2*len(sum))
	if dir != "" {
		b.WriteString(dir)
		b.WriteByte(os.PathSeparator)
	}
	for i := range n {
		c := key[i]
		if !isNameByte(c) {
			c = '_'
		}
		b.WriteByte(c)
	}
	b.WriteByte('-')
	var hexSum [2 * sha256.Size]byte
	hex.Encode(hexSum[:], sum[:])
	b.Write(hexSum[:])
	return b.String()
}

// isNameByte reports whether c may appear as itself in a lock name.
func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// validOwner reports whether owner can be written into a lease entry's name:
// the engine passes 32 lowercase hex digits, and anything that is not a short
// run of [A-Za-z0-9_-] could not be parsed back (or would not be one name).
func validOwner(owner string) bool {
	if owner == "" || len(owner) > maxOwnerLen {
		return false
	}
	for i := range len(owner) {
		if !isNameByte(owner[i]) {
			return false
		}
	}
	return true
}

// lease is one lease entry of a lock directory, as its name describes it.
// Entry 0 is written before the directory is published and holds the holder's
// JSON record; each Extend adds the next sequence number as an empty file.
// The entry with the highest sequence number is the lock's current lease.
type lease struct {
	name    string
	seq     uint64
	expires int64 // wall clock, Unix nanoseconds
	owner   string
}

// leaseName returns the name of the lease entry (seq, expires, owner).
func leaseName(seq uint64, expires int64, owner string) string {
	var buf [len(leasePrefix) + 20 + 1 + 20 + 1 + maxOwnerLen]byte
	b := append(buf[:0], leasePrefix...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, '.')
	b = strconv.AppendInt(b, expires, 10)
	b = append(b, '.')
	b = append(b, owner...)
	return string(b)
}

// parseLease parses a lease entry's name; ok is false for any other name.
func parseLease(name string) (l lease, ok bool) {
	rest, ok := strings.CutPrefix(name, leasePrefix)
	if !ok {
		return lease{}, false
	}
	seq, rest, ok := strings.Cut(rest, ".")
	if !ok {
		return lease{}, false
	}
	expires, owner, ok := strings.Cut(rest, ".")
	if !ok || !validOwner(owner) {
		return lease{}, false
	}
	s, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return lease{}, false
	}
	e, err := strconv.ParseInt(expires, 10, 64)
	if err != nil {
		return lease{}, false
	}
	return lease{name: name, seq: s, expires: e, owner: owner}, true
}
