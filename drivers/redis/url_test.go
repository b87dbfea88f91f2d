package redis

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
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
		if !errors.Is(err, ErrBadURL) {
			t.Errorf("Open(%q) = %v; want an error wrapping ErrBadURL", raw, err)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Open(%q) error shows the password: %v", raw, err)
		}
	}
}

func TestOpenEmptyURLReadsEnvironment(t *testing.T) {
	t.Setenv(urlEnv, "")
	if d, err := Open(""); !errors.Is(err, ErrBadURL) || !strings.Contains(err.Error(), "REDIS_URL") {
		if d != nil {
			_ = d.Close()
		}
		t.Fatalf("Open(\"\") with $REDIS_URL unset = %v; want ErrBadURL naming REDIS_URL", err)
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

func TestLeastPrivilegeACL(t *testing.T) {
	// The permissions docs/drivers/redis.md lists, and no more.
	s := startServer(t, "--user", "locker", "on", ">pw", "~{zerotal_lock_test:*", "&zerotal_lock:grant:*",
		"+@connection", "+evalsha", "+eval", "+exists", "+get", "+set", "+setrange", "+pexpire", "+pttl",
		"+del", "+time", "+lpop", "+rpush", "+lindex", "+llen", "+lrem", "+hget", "+hset", "+hdel",
		"+publish", "+pubsub|numsub", "+subscribe")
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
