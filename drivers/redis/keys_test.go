package redis

import (
	"net/url"
	"strings"
	"testing"
)

// clusterHashTag returns the part of key that Redis Cluster hashes to pick a
// slot: the bytes between the first '{' and the first '}' after it, or the
// whole key when there is no such non-empty span.
func clusterHashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

func FuzzRedisKeys(f *testing.F) {
	for _, seed := range []string{
		"", "invoice:123", "zerotal_lock:a", "}", "{", "{}", "}{", "}x", "a}b", "{a}b",
		"%", "%7D", "%25", "a%7Db", "}}}{{{", "ключ", "tab\there",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, key string) {
		lock, fence := redisKeys(key)
		tag := clusterHashTag(lock)
		if got := clusterHashTag(fence); got != tag {
			t.Fatalf("redisKeys(%q) = %q, %q: hash tags %q and %q differ, so a script on both would cross slots", key, lock, fence, tag, got)
		}
		if lock != "{"+tag+"}" || fence != lock+fenceSuffix {
			t.Fatalf("redisKeys(%q) = %q, %q: the whole escaped key must be the hash tag", key, lock, fence)
		}
		// The tag decodes back to the key, so no two keys share Redis keys.
		if key == "" {
			if tag != "%" {
				t.Fatalf("redisKeys(\"\") has tag %q; want %%", tag)
			}
			return
		}
		back, err := url.PathUnescape(tag)
		if err != nil || back != key {
			t.Fatalf("redisKeys(%q): tag %q decodes to %q, %v; want the key back", key, tag, back, err)
		}
		if strings.HasSuffix(lock, fenceSuffix) {
			t.Fatalf("redisKeys(%q): lock key %q could be another key's counter", key, lock)
		}
	})
}

func TestRedisKeysLeavesPlainKeysReadable(t *testing.T) {
	lock, fence := redisKeys("zerotal_lock:invoice:123")
	if lock != "{zerotal_lock:invoice:123}" || fence != "{zerotal_lock:invoice:123}:fence" {
		t.Fatalf("redisKeys = %q, %q", lock, fence)
	}
}

func BenchmarkRedisKeys(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		redisKeys("zerotal_lock:invoice:123")
	}
}
