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
		k := redisKeys(key)
		lock := k.lock
		tag := clusterHashTag(lock)
		for _, other := range []string{k.queue, k.waiters} {
			if got := clusterHashTag(other); got != tag {
				t.Fatalf("redisKeys(%q) = %+v: hash tags %q and %q differ, so a script on both would cross slots", key, k, tag, got)
			}
		}
		if lock != "{"+tag+"}" || k.queue != lock+queueSuffix || k.waiters != lock+waitersSuffix {
			t.Fatalf("redisKeys(%q) = %+v: the whole escaped key must be the hash tag, followed by the suffixes", key, k)
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
		for _, suffix := range []string{queueSuffix, waitersSuffix} {
			if strings.HasSuffix(lock, suffix) {
				t.Fatalf("redisKeys(%q): lock key %q could be another key's %q key", key, lock, suffix)
			}
		}
	})
}

func TestRedisKeysLeavesPlainKeysReadable(t *testing.T) {
	want := lockKeys{
		lock:    "{zerotal_lock:invoice:123}",
		queue:   "{zerotal_lock:invoice:123}:q",
		waiters: "{zerotal_lock:invoice:123}:w",
	}
	if got := redisKeys("zerotal_lock:invoice:123"); got != want {
		t.Fatalf("redisKeys = %+v; want %+v", got, want)
	}
}

func BenchmarkRedisKeys(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		redisKeys("zerotal_lock:invoice:123")
	}
}
