package redis

import (
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/driver"
)

func TestOpenRejectsBadURLsWithoutShowingThePassword(t *testing.T) {
	const password = "s3cr3t-PW"
	for _, raw := range []string{
		"redis://user:" + password + "@localhost:notaport",
		"redis://user:" + password + "%zz@localhost",
		"redis://user:" + password + " x@localhost",
		"redis://user:" + password + "@[::1",
		"redis://user:" + password + "@localhost/notadb",
		"redis://user:" + password + "@localhost/1/2",
		"redis://user:" + password + "@localhost/0?bogus=1",
		"redis://user:" + password + "@localhost/0?dial_timeout=" + password,
		"redis://user:" + password + "@localhost/0?db=" + password,
		"http://user:" + password + "@localhost",
		"redis:user:" + password + "@localhost",
		"user:" + password + "@localhost:6379",
		"localhost:" + password,
		" redis://user:" + password + "@localhost",
		"//user:" + password + "@localhost",
		"unix://user:" + password + "@",
		"redis://user:" + password + "\n@localhost",
	} {
		d, err := Open(raw)
		if err == nil {
			_ = d.Close()
			t.Errorf("Open(%q) succeeded; want an error", raw)
			continue
		}
		if !errors.Is(err, driver.ErrBadURL) {
			t.Errorf("Open(%q) = %v; want an error wrapping driver.ErrBadURL", raw, err)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Open(%q) error shows the password: %v", raw, err)
		}
	}
}

func TestOpenEmptyURLReadsEnvironment(t *testing.T) {
	t.Setenv(urlEnv, "")
	if d, err := Open(""); !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), "REDIS_URL") {
		if d != nil {
			_ = d.Close()
		}
		t.Fatalf("Open(\"\") with $REDIS_URL unset = %v; want driver.ErrBadURL naming REDIS_URL", err)
	}

	s := startServer(t)
	t.Setenv(urlEnv, s.url()+"/4")
	d, err := Open("")
	if err != nil {
		t.Fatalf("Open(\"\") with $REDIS_URL=%s: %v", s.url(), err)
	}
	defer d.Close()
	ctx := t.Context()
	key := testKey(t, "env")
	if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	lock := redisKeys(key).lock
	db4 := goredis.NewClient(&goredis.Options{Addr: s.addr(), DB: 4})
	defer db4.Close()
	if n, err := db4.Exists(ctx, lock).Result(); err != nil || n != 1 {
		t.Fatalf("the lock is not in db 4 named by $REDIS_URL: EXISTS = %d, %v", n, err)
	}
}

func TestOpenUnixSocketWithDB(t *testing.T) {
	// Socket paths are limited to about 100 bytes; TempDir paths can be long.
	dir, err := filepath.Abs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "r.sock")
	if len(sock) > 100 {
		t.Fatalf("socket path %q is too long for a unix socket; set TMPDIR to a shorter directory", sock)
	}
	s := startServer(t, "--unixsocket", sock, "--unixsocketperm", "700")
	d, err := Open("unix://" + sock + "?db=3")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := t.Context()
	key := testKey(t, "unix")
	if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire over a unix socket = %v, %v", ok, err)
	}
	lock := redisKeys(key).lock
	db3 := goredis.NewClient(&goredis.Options{Addr: s.addr(), DB: 3})
	defer db3.Close()
	if n, err := db3.Exists(ctx, lock).Result(); err != nil || n != 1 {
		t.Fatalf("the lock is not in db 3: EXISTS = %d, %v", n, err)
	}
}

func TestOpenUserAndPassword(t *testing.T) {
	const password = "s3cr3t/pw@x"
	s := startServer(t, "--user", "alice", "on", ">"+password, "~*", "&*", "+@all")
	base := "redis://alice:" + strings.NewReplacer("/", "%2F", "@", "%40").Replace(password) + "@" + s.addr()

	d, err := Open(base + "/2")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := t.Context()
	if ok, err := d.Acquire(ctx, testKey(t, "acl"), newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire as alice = %v, %v", ok, err)
	}
	who, err := d.client.Do(ctx, "ACL", "WHOAMI").Text()
	if err != nil || who != "alice" {
		t.Fatalf("ACL WHOAMI = %q, %v; want alice", who, err)
	}

	wrong, err := Open("redis://alice:wr0ng-s3cr3t@" + s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer wrong.Close()
	_, err = wrong.Acquire(ctx, testKey(t, "acl"), newOwner(), time.Minute)
	if err == nil {
		t.Fatal("Acquire with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t") {
		t.Fatalf("the error shows the password: %v", err)
	}
}

func TestOpenTLSSchemeConfiguresTLS(t *testing.T) {
	d, err := Open("rediss://cache.example:6380/1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	opts := d.client.(*goredis.Client).Options()
	if opts.TLSConfig == nil || opts.TLSConfig.ServerName != "cache.example" || opts.Addr != "cache.example:6380" || opts.DB != 1 {
		t.Fatalf("rediss:// gave Addr %q DB %d TLS %+v; want TLS to cache.example:6380, db 1", opts.Addr, opts.DB, opts.TLSConfig)
	}
}

// The permissions docs/drivers/redis.md lists, and no more: with Redis
// Functions (FCALL, FUNCTION LOAD), and with scripts alone (EVALSHA, EVAL).
func TestLeastPrivilegeACL(t *testing.T) {
	for _, c := range []struct {
		name     string
		scripts  []string
		mustCall string
	}{
		{"functions", []string{"+fcall", "+function|load"}, "fcall"},
		{"scripts", []string{"+evalsha", "+eval"}, "evalsha"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--user", "locker", "on", ">pw", "~{zerotal_lock_test:*", "&zerotal_lock:grant:*", "+@connection"}, c.scripts...)
			args = append(args, "+exists", "+get", "+set", "+setrange", "+pexpire", "+pttl",
				"+del", "+time", "+lpop", "+rpush", "+lindex", "+llen", "+lrem", "+hget", "+hset", "+hdel",
				"+publish", "+pubsub|numsub", "+subscribe")
			s := startServer(t, args...)
			leastPrivilege(t, s)
			if calls := commandCalls(t, s.client(t)); calls[c.mustCall] == 0 {
				t.Fatalf("the driver never sent %s: commandstats %v", c.mustCall, calls)
			}
		})
	}
}

// leastPrivilege runs every operation, a queued wait and a hand-off
// included, as the user "locker" of s.
func leastPrivilege(t *testing.T, s *server) {
	d, err := Open("redis://locker:pw@"+s.addr(), noPolls)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	holder, err := Open("redis://locker:pw@" + s.addr())
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ctx := t.Context()
	key := testKey(t, "acl")
	owner := newOwner()
	if _, ok, err := holder.AcquireFenced(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	if ok, err := holder.Extend(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	if _, held, err := holder.Inspect(ctx, key); err != nil || !held {
		t.Fatalf("Inspect = %v, %v", held, err)
	}
	if held, err := holder.Exists(ctx, key); err != nil || !held {
		t.Fatalf("Exists = %v, %v", held, err)
	}
	// Two waiters: one leaves, the other is handed the key by a notice.
	_, leave := startWait(t, d, key, newOwner(), time.Minute)
	rc := s.client(t)
	waitQueued(t, rc, key, 1)
	next := newOwner()
	result, _ := startWait(t, d, key, next, time.Minute)
	waitQueued(t, rc, key, 2)
	leave()
	waitQueued(t, rc, key, 1)
	if ok, err := holder.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if r := awaitResult(t, result, handOffBound, "the holder released, with least-privilege ACLs"); r.err != nil {
		t.Fatalf("AcquireWait: %v", r.err)
	}
	if err := holder.ForceRelease(ctx, key); err != nil {
		t.Fatalf("ForceRelease: %v", err)
	}
	if _, err := holder.Acquire(ctx, "outside:"+key, owner, time.Minute); err == nil {
		t.Fatal("Acquire of a key outside the ACL's pattern succeeded: the ACL does not restrict keys, so this test proves nothing")
	}
}

func TestOpenRejectsOptionsGoRedisWouldPanicOnOrIgnore(t *testing.T) {
	for _, q := range []string{
		"pool_size=-1", "pool_size=0", "min_idle_conns=-1", "max_idle_conns=-1",
		"max_active_conns=-5", "max_concurrent_dials=0", "protocol=4", "db=-1",
		"max_retries=-2", "pool_size=ten", "pool_size=1&pool_size=2",
		"pipeline_pool_size=-2", "pipeline_read_buffer_size=-1",
	} {
		raw := "redis://localhost:1/0?" + q
		d, err := Open(raw)
		if err == nil {
			_ = d.Close()
			t.Errorf("Open(%q) succeeded; want an error naming the option", raw)
			continue
		}
		name, _, _ := strings.Cut(q, "=")
		if !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), name) {
			t.Errorf("Open(%q) = %v; want an driver.ErrBadURL naming %s", raw, err, name)
		}
	}
	for _, q := range []string{"pool_size=1", "max_retries=-1", "min_idle_conns=0", "protocol=2", "db=15", "dial_timeout=2s"} {
		d, err := Open("redis://localhost:1/0?" + q)
		if err != nil {
			t.Errorf("Open with %s = %v; want it accepted", q, err)
			continue
		}
		_ = d.Close()
	}
}

// FuzzOpenURL feeds arbitrary URLs to Open, which must never panic, must
// refuse with driver.ErrBadURL or succeed, and must never echo the password.
func FuzzOpenURL(f *testing.F) {
	for _, s := range []string{
		"redis://localhost:6379/0", "rediss://u:p@h:1/2?dial_timeout=1s", "unix:///tmp/r.sock?db=3",
		"redis://h?pool_size=-1", "redis://h?min_idle_conns=-1&max_idle_conns=-1", "redis://:pw@h:0",
		"redis://[::1]:1/0?protocol=3", "redis://h/0?pool_size=99999999999999999999",
	} {
		f.Add(s, "pw")
	}
	f.Fuzz(func(t *testing.T, raw, password string) {
		if password == "" || strings.ContainsAny(password, "@:/?#[]%") {
			password = "fuzz-secret"
		}
		raw = strings.Replace(raw, "pw", password, 1)
		d, err := Open(raw)
		if err != nil {
			if !errors.Is(err, driver.ErrBadURL) {
				t.Fatalf("Open(%q) = %v; want driver.ErrBadURL", raw, err)
			}
			// Only a password in the URL's password place is secret: the
			// same text as a scheme or host is the URL's, and may be shown.
			u, perr := url.Parse(raw)
			secret := false
			if perr == nil && u.User != nil {
				p, set := u.User.Password()
				secret = set && p == password && strings.Count(raw, password) == 1
			}
			if secret && len(password) >= 8 && strings.Contains(err.Error(), password) {
				t.Fatalf("Open(%q) error shows the password: %v", raw, err)
			}
			return
		}
		_ = d.Close()
	})
}

// A cluster client Open makes reloads its slot map every second unless the
// URL says otherwise; a bad interval is refused before any connection.
func TestClusterReloadInterval(t *testing.T) {
	for raw, want := range map[string]time.Duration{
		"redis+cluster://n1:7000?addr=n2:7000":                      time.Second,
		"redis+cluster://n1:7000?addr=n2:7000&cluster_reload=250ms": 250 * time.Millisecond,
	} {
		d, err := Open(raw)
		if err != nil {
			t.Fatalf("Open(%q): %v", raw, err)
		}
		got := d.client.(*goredis.ClusterClient).Options().ClusterStateReloadInterval
		_ = d.Close()
		if got != want {
			t.Errorf("Open(%q): ClusterStateReloadInterval = %v; want %v", raw, got, want)
		}
	}
	for _, raw := range []string{"redis+cluster://n1:7000?cluster_reload=soon", "redis+cluster://n1:7000?cluster_reload=0s"} {
		if _, err := Open(raw); !errors.Is(err, driver.ErrBadURL) || !strings.Contains(err.Error(), "cluster_reload") {
			t.Errorf("Open(%q) = %v; want ErrBadURL naming cluster_reload", raw, err)
		}
	}
}
