package conformance

import (
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/zerotal/lock/driver"
)

// TestIsolatedKeysAreValid checks that the key isolation subtest only passes
// keys the engine would: a driver must not be failed for rejecting a key the
// engine never sends.
func TestIsolatedKeysAreValid(t *testing.T) {
	prefix := newPrefix()
	keys := isolatedKeys(prefix)
	seen := make(map[string]bool, len(keys))
	longest := 0
	for _, key := range keys {
		switch {
		case key == "", len(key) > driver.MaxKeyLen, !utf8.ValidString(key), strings.ContainsRune(key, 0):
			t.Errorf("invalid key %s (%d bytes)", show(key), len(key))
		case seen[key]:
			t.Errorf("duplicate key %s", show(key))
		}
		seen[key] = true
		longest = max(longest, len(key))
	}
	if longest != driver.MaxKeyLen {
		t.Errorf("longest key is %d bytes, want driver.MaxKeyLen (%d)", longest, driver.MaxKeyLen)
	}
}

// TestOwnersAndPrefixesAreFresh checks that owners have the engine's form and
// that no two draws repeat.
func TestOwnersAndPrefixesAreFresh(t *testing.T) {
	form := regexp.MustCompile(`^[0-9a-f]{32}$`)
	owners, prefixes := make(map[string]bool), make(map[string]bool)
	for range 1000 {
		owner, prefix := newOwner(), newPrefix()
		if !form.MatchString(owner) {
			t.Fatalf("owner %q is not 32 lowercase hex digits", owner)
		}
		if owners[owner] || prefixes[prefix] {
			t.Fatalf("owner %q or prefix %q drawn twice", owner, prefix)
		}
		owners[owner], prefixes[prefix] = true, true
	}
}
