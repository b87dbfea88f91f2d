package conformance

import (
	"strings"

	"github.com/zerotal/lock/driver"
)

// isolatedKeys returns keys that a careless driver confuses: keys that differ
// in one byte, in case, or in Unicode normalisation, keys that are prefixes
// of each other, keys that look like paths and clean to one another, and
// keys of the longest length the engine passes on. All are distinct, valid
// UTF-8 without NUL, and at most driver.MaxKeyLen bytes.
func isolatedKeys(prefix string) []string {
	long := func(first, last byte) string {
		fill := driver.MaxKeyLen - len(prefix) - 2
		return prefix + string(first) + strings.Repeat("k", fill) + string(last)
	}
	return []string{
		prefix[:len(prefix)-1], // the prefix without its separator
		prefix + "a",
		prefix + "a:",
		prefix + "ab",
		prefix + "A",
		prefix + "b",
		prefix + "a ",
		prefix + " a",
		prefix + "a b",
		prefix + "a\tb",
		prefix + "a\nb",
		prefix + "\u00e9",  // é, composed (NFC)
		prefix + "e\u0301", // é, decomposed (NFD)
		prefix + "日本語",
		prefix + "🔒",
		prefix + "x",
		prefix + "../x",
		prefix + "/../../x",
		prefix + "x/y",
		prefix + "x/./y",
		prefix + "x//y",
		prefix + "x/y/",
		prefix + "x\\y",
		prefix + "x%2Fy",
		prefix + "x_y",
		prefix + "*",
		prefix + "?",
		prefix + ".",
		long('k', 'a'),
		long('k', 'b'),
		long('j', 'a'),
		long('k', 'a')[:driver.MaxKeyLen-1],
	}
}

// testKeyIsolation checks that every distinct key is its own lock.
func testKeyIsolation(e *env) {
	a, b := e.open(), e.open()
	keys := isolatedKeys(e.prefix)
	owners := make([]string, len(keys))
	for i, key := range keys {
		owners[i] = newOwner()
		if !e.acquire(a, key, owners[i], hold) {
			e.t.Fatalf("Acquire(%s) = false on a fresh key, after acquiring %d other keys: the driver confuses it with one of %q",
				show(key), i, keys[:i])
		}
	}
	if in, ok := a.(driver.Inspector); ok {
		for i, key := range keys {
			h, held, err := in.Inspect(e.ctx, key)
			if err != nil {
				e.t.Fatalf("Inspect(%s): unexpected error: %v", show(key), err)
			}
			if !held || h.Owner != owners[i] {
				e.t.Errorf("Inspect(%s) = owner %q, held %v; want owner %q, held true", show(key), h.Owner, held, owners[i])
			}
		}
	}
	for i, key := range keys {
		next := owners[(i+1)%len(owners)]
		if e.release(b, key, next) {
			e.t.Fatalf("Release(%s) with the owner token of %s = true, want false", show(key), show(keys[(i+1)%len(keys)]))
		}
	}
	for i, key := range keys {
		if !e.release(b, key, owners[i]) {
			e.t.Fatalf("Release(%s) by its holder = false, want true: another key's operations changed it", show(key))
		}
		if e.exists(a, key) {
			e.t.Errorf("Exists(%s) = true after its holder released it, want false", show(key))
		}
		for _, still := range keys[i+1:] {
			if !e.exists(a, still) {
				e.t.Fatalf("releasing %s also freed %s: the driver confuses the two keys", show(key), show(still))
			}
		}
	}
}
