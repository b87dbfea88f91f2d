package file

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestLockNames: names are distinct per key even where the readable parts
// collide, short enough for NAME_MAX, made of safe bytes, and never start
// with the dot of the driver's own work files.
func TestLockNames(t *testing.T) {
	long := strings.Repeat("x", readableLen)
	keys := []string{"a/b", "a_b", "a.b", "a?b", "A_B", long + "1", long + "2", strings.Repeat("\xff", 1024), ".hidden", ""}
	seen := make(map[string]string)
	for _, key := range keys {
		name := lockPath("", key)
		if prev, dup := seen[name]; dup {
			t.Errorf("keys %q and %q share the name %q", prev, key, name)
		}
		seen[name] = key
		if len(name) > 255 {
			t.Errorf("name of %q is %d bytes; NAME_MAX is 255", key, len(name))
		}
		if strings.HasPrefix(name, ".") || strings.ContainsFunc(name, func(r rune) bool { return r > 0x7f || !isNameByte(byte(r)) }) {
			t.Errorf("name %q of key %q has an unsafe byte or leading dot", name, key)
		}
	}
	if got, want := lockPath("/locks", "orders:42"), "/locks"+string(os.PathSeparator)+"orders_42-"; !strings.HasPrefix(got, want) {
		t.Errorf("lockPath = %q; want prefix %q", got, want)
	}
}

// TestLeaseNames round-trips lease entry names and rejects others.
func TestLeaseNames(t *testing.T) {
	owner := newOwner()
	exp := time.Now().UnixNano()
	name := leaseName(7, exp, owner)
	l, ok := parseLease(name)
	if !ok || l.seq != 7 || l.expires != exp || l.owner != owner || l.name != name {
		t.Errorf("parseLease(%q) = %+v, %v", name, l, ok)
	}
	for _, bad := range []string{"lease.", "lease.1", "lease.1.2", "lease.x.2.o", "lease.1.x.o", "lease.1.2.a.b", "lease.1.2.", "owner.json", "lease.-1.2.o"} {
		if l, ok := parseLease(bad); ok {
			t.Errorf("parseLease(%q) = %+v; want rejected", bad, l)
		}
	}
}
