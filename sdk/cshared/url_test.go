package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
	"github.com/zerotal/lock/drivers/postgres/postgrestest"
	"github.com/zerotal/lock/drivers/redis/redistest"
)

// backendURLs starts a private server of every kind a URL can name — a Redis
// server, a 3-master Redis Cluster, a Sentinel watching a master and a
// replica, an etcd member — and returns each backend's URL, with whether its
// driver mints fencing tokens. PostgreSQL is the shared service, in a table
// of this test's own.
func backendURLs(t *testing.T) map[string]struct {
	url    string
	tokens bool
} {
	dir := t.TempDir()
	cluster := redistest.StartCluster(t, 3, 0, 2*time.Second)
	sentinel := redistest.StartSentinel(t, 1, 1, 5*time.Second)
	etcd := etcdtest.Start(t)
	pg := postgrestest.SharedURL(t)
	return map[string]struct {
		url    string
		tokens bool
	}{
		"sqlite":         {"sqlite://" + filepath.Join(dir, "locks.db"), true},
		"file":           {"file://" + filepath.Join(dir, "locks"), false},
		"redis":          {redistest.StartT(t).URL(), true},
		"redis+cluster":  {cluster.URL(), true},
		"redis+sentinel": {sentinel.URL(), true},
		"postgres":       {pg + "&lock_table=" + postgrestest.Table(t, pg), true},
		"etcd":           {etcd.URL(), true},
	}
}

// TestEveryDriverByURL opens every driver by URL through zl_open and through
// the Python client: a second owner is refused while the first holds the
// key and gets it after the release, with a larger fencing token.
func TestEveryDriverByURL(t *testing.T) {
	exe := compileC(t, "url_test", "ctest/url_test.c")
	prefix := "by-url-" + randomHex(t) + ":"
	for name, b := range backendURLs(t) {
		config, err := json.Marshal(map[string]string{"url": b.url, "prefix": prefix})
		if err != nil {
			t.Fatal(err)
		}
		tokens := "notokens"
		if b.tokens {
			tokens = "tokens"
		}
		t.Run("C/"+name, func(t *testing.T) {
			stdout, stderr := run(t, exec.Command(exe, string(config), tokens))
			if !strings.HasPrefix(stdout, "ok:") {
				t.Fatalf("url_test on %s:\n%s\n%s", b.url, stdout, stderr)
			}
		})
		t.Run("Python/"+name, func(t *testing.T) {
			stdout, stderr := run(t, python(t, "-c", pythonByURL, string(config), tokens))
			if !strings.HasPrefix(stdout, "ok:") {
				t.Fatalf("Python on %s:\n%s\n%s", b.url, stdout, stderr)
			}
		})
	}
}

// pythonByURL is url_test.c in Python.
const pythonByURL = `
import json, sys
import zerotal_lock
config, tokens = json.loads(sys.argv[1]), sys.argv[2] == "tokens"
with zerotal_lock.Manager(config) as m:
    a, b = m.lock("by-url", 30), m.lock("by-url", 30)
    assert a.acquire(), "first acquire refused"
    first = a.token
    assert not b.acquire(), "second owner got a held key"
    a.release()
    assert b.acquire(), "second owner refused after the release"
    second = b.token
    assert not tokens or 0 < first < second, (first, second)
    b.release()
    a.free(); b.free()
print("ok: tokens", first, second)
`
