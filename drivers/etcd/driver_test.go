package etcd

import (
	"errors"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

func TestTTLRoundsUpToWholeSeconds(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Nanosecond, 1},
		{time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{1500 * time.Millisecond, 2},
		{time.Minute, 60},
		{clientv3.MaxLeaseTTL * time.Second, clientv3.MaxLeaseTTL},
	} {
		if got, err := ttlSeconds(tc.ttl); err != nil || got != tc.want {
			t.Errorf("ttlSeconds(%v) = %d, %v; want %d", tc.ttl, got, err, tc.want)
		}
	}
	if _, err := ttlSeconds(clientv3.MaxLeaseTTL*time.Second + time.Nanosecond); err == nil || !strings.Contains(err.Error(), "ttl") {
		t.Errorf("ttlSeconds beyond etcd's longest lease = %v; want an error naming the ttl", err)
	}
}

// leaseOf returns the lease of key's lock, failing t if it is not held.
func leaseOf(t *testing.T, cli *clientv3.Client, key string) clientv3.LeaseID {
	t.Helper()
	resp, err := cli.Get(t.Context(), DefaultPrefix+key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get(%q) = %v, %v; want the lock key", DefaultPrefix+key, resp, err)
	}
	return clientv3.LeaseID(resp.Kvs[0].Lease)
}

func TestLeaseIsTheTTLRoundedUp(t *testing.T) {
	c := etcdtest.Start(t)
	d, cli := openDriver(t, c.URL()), c.Client(t)
	key := testKey(t, "rounded")
	if ok, err := d.Acquire(t.Context(), key, newOwner(), 1500*time.Millisecond); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	ttl, err := cli.TimeToLive(t.Context(), leaseOf(t, cli, key))
	if err != nil {
		t.Fatal(err)
	}
	if ttl.GrantedTTL != 2 {
		t.Errorf("the lock's lease was granted for %ds; want 2s (1.5s rounded up)", ttl.GrantedTTL)
	}
}

func TestTokensAreGlobalRevisions(t *testing.T) {
	c := etcdtest.Start(t)
	d := openDriver(t, c.URL())
	ctx := t.Context()
	a, b, owner := testKey(t, "a"), testKey(t, "b"), newOwner()
	first, ok, err := d.AcquireFenced(ctx, a, owner, time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced(a) = %v, %v", ok, err)
	}
	other, ok, err := d.AcquireFenced(ctx, b, newOwner(), time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced(b) = %v, %v", ok, err)
	}
	if other <= first {
		t.Errorf("token of a later acquisition of another key = %d, want above %d: tokens are the cluster's revisions", other, first)
	}
	again, ok, err := d.AcquireFenced(ctx, a, owner, 2*time.Minute)
	if err != nil || !ok || again != first {
		t.Errorf("AcquireFenced(a) by its holder = %d, %v, %v; want the acquisition's token %d", again, ok, err, first)
	}
	resp, err := c.Client(t).Get(ctx, DefaultPrefix+a)
	if err != nil || len(resp.Kvs) != 1 || uint64(resp.Kvs[0].CreateRevision) != first {
		t.Errorf("the lock key = %v, %v; want it created at revision %d, the token", resp, err, first)
	}
}

// liveLeases returns how many leases the server has.
func liveLeases(t *testing.T, cli *clientv3.Client) int {
	t.Helper()
	resp, err := cli.Leases(t.Context())
	if err != nil {
		t.Fatalf("listing leases: %v", err)
	}
	return len(resp.Leases)
}

// idleLeases returns how many emptied leases d keeps for reuse.
func idleLeases(d *Driver) int {
	d.pool.mu.Lock()
	defer d.pool.mu.Unlock()
	return len(d.pool.idle)
}

func TestLeasesThatHoldNothingAreReusedOrRevoked(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	d, err := Open(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	other, err := Open(c.URL())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key, owner := testKey(t, "revoked"), newOwner()
	// Leases of a minute: only revocation, never expiry, removes them
	// within the test.
	for range 3 {
		if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
	}
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	for range 3 {
		if ok, err := other.Acquire(ctx, key, newOwner(), time.Minute); err != nil || ok {
			t.Fatalf("contended Acquire = %v, %v; want false", ok, err)
		}
	}
	if ok, err := d.Acquire(ctx, key, owner, 2*time.Minute); err != nil || !ok { // re-acquire: another lease
		t.Fatalf("re-Acquire = %v, %v", ok, err)
	}
	if ok, err := d.Extend(ctx, key, owner, 3*time.Minute); err != nil || !ok { // longer: another lease
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	// Every lease is the held lock's or kept for reuse by its Driver.
	want := func() int { return 1 + idleLeases(d) + idleLeases(other) }
	if !waitUntil(5*time.Second, func() bool { return liveLeases(t, cli) == want() }) {
		t.Fatalf("%d leases live after released, failed, re-acquired and extended acquisitions; want %d: the held lock's and the %d+%d kept for reuse",
			liveLeases(t, cli), want(), idleLeases(d), idleLeases(other))
	}
	if err := other.ForceRelease(ctx, key); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := other.Close(); err != nil {
		t.Fatal(err)
	}
	if n := liveLeases(t, cli); n != 0 {
		t.Errorf("%d leases live after ForceRelease and Close; want 0: ForceRelease revokes the lock's lease, Close the kept ones", n)
	}
}

func TestACycleLoopReusesOneLease(t *testing.T) {
	c := etcdtest.Start(t)
	d, cli := openDriver(t, c.URL()), c.Client(t)
	ctx := t.Context()
	key, owner := testKey(t, "loop"), newOwner()
	var first clientv3.LeaseID
	for i := range 5 {
		if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		lease := leaseOf(t, cli, key)
		if i == 0 {
			first = lease
		} else if lease != first {
			t.Errorf("cycle %d took lease %x; want the first cycle's %x again", i, lease, first)
		}
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
	}
	if n := liveLeases(t, cli); n != 1 {
		t.Errorf("%d leases live after 5 cycles; want 1, kept for the next", n)
	}
}

func TestStaleOrLostLeasesAreNotReused(t *testing.T) {
	c := etcdtest.Start(t)
	d, cli := openDriver(t, c.URL()), c.Client(t)
	ctx := t.Context()
	key, owner := testKey(t, "stale"), newOwner()
	cycle := func(ttl time.Duration) clientv3.LeaseID {
		t.Helper()
		if ok, err := d.Acquire(ctx, key, owner, ttl); err != nil || !ok {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		lease := leaseOf(t, cli, key)
		if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		return lease
	}
	// A lease with less than half its TTL left is not reused.
	kept := cycle(time.Second)
	time.Sleep(600 * time.Millisecond) // let half of the 1s lease pass
	if next := cycle(time.Second); next == kept {
		t.Errorf("a lease kept for 600ms of its 1s TTL was reused")
	}
	// A kept lease that is gone (revoked by someone, expired) is
	// replaced: the acquisition still holds for its TTL.
	kept = cycle(time.Minute)
	if _, err := cli.Revoke(ctx, kept); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire after the kept lease was revoked = %v, %v", ok, err)
	}
	lease := leaseOf(t, cli, key)
	if ttl, err := cli.TimeToLive(ctx, lease); err != nil || ttl.TTL < 50 {
		t.Fatalf("the lock's lease after the kept one was lost: %+v, %v; want a live one of about a minute", ttl, err)
	}
}

func TestExtendToALongerTTLMovesTheLock(t *testing.T) {
	c := etcdtest.Start(t)
	d, cli := openDriver(t, c.URL()), c.Client(t)
	ctx := t.Context()
	key, owner := testKey(t, "longer"), newOwner()
	token, ok, err := d.AcquireFenced(ctx, key, owner, time.Second)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	before := leaseOf(t, cli, key)
	if ok, err := d.Extend(ctx, key, owner, 30*time.Second); err != nil || !ok {
		t.Fatalf("Extend = %v, %v", ok, err)
	}
	after := leaseOf(t, cli, key)
	ttl, err := cli.TimeToLive(ctx, after)
	if err != nil || ttl.GrantedTTL != 30 {
		t.Fatalf("lease after Extend(30s) = %+v, %v; want one granted for 30s", ttl, err)
	}
	if after == before {
		t.Errorf("Extend to a longer TTL kept lease %x; want a new one", before)
	}
	if h, held, err := d.Inspect(ctx, key); err != nil || !held || h.Token != token || h.Owner != owner {
		t.Errorf("Inspect after Extend = %+v, %v, %v; want owner %s with the same token %d", h, held, err, owner, token)
	}
	// Shorter or equal TTLs renew the lease in place.
	if ok, err := d.Extend(ctx, key, owner, 10*time.Second); err != nil || !ok {
		t.Fatalf("Extend(10s) = %v, %v", ok, err)
	}
	if again := leaseOf(t, cli, key); again != after {
		t.Errorf("Extend to a TTL the lease covers moved the lock from lease %x to %x", after, again)
	}
}

func TestBadInputIsRefusedBeforeTheServer(t *testing.T) {
	// Nothing listens on port 1: a call that reached for the server would
	// fail with a connection error, not with the input's.
	d, err := Open("etcd://127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	ctx := t.Context()
	owner := newOwner()
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"Acquire with a NUL in the key", func() error { _, err := d.Acquire(ctx, "a\x00b", owner, time.Second); return err }, "NUL"},
		{"Release with a newline in the owner", func() error { _, err := d.Release(ctx, "k", "a\nb"); return err }, "newline"},
		{"AcquireWait with a TTL beyond etcd's", func() error {
			_, err := d.AcquireWait(ctx, "k", owner, (clientv3.MaxLeaseTTL+1)*time.Second)
			return err
		}, "ttl"},
		{"Extend with a TTL beyond etcd's", func() error {
			_, err := d.Extend(ctx, "k", owner, (clientv3.MaxLeaseTTL+1)*time.Second)
			return err
		}, "ttl"},
		{"Exists with a NUL in the key", func() error { _, err := d.Exists(ctx, "\x00"); return err }, "NUL"},
		{"ForceRelease with a NUL in the key", func() error { return d.ForceRelease(ctx, "\x00") }, "NUL"},
		{"Inspect with a NUL in the key", func() error { _, _, err := d.Inspect(ctx, "\x00"); return err }, "NUL"},
	} {
		start := time.Now()
		err := tc.call()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error naming the %s", tc.name, err, tc.want)
		}
		if elapsed := time.Since(start); elapsed > 100*time.Millisecond {
			t.Errorf("%s took %v: the input was not checked before the server", tc.name, elapsed)
		}
	}
}

func TestNilClient(t *testing.T) {
	d := New(nil)
	ctx := t.Context()
	if _, err := d.Acquire(ctx, "k", newOwner(), time.Second); !errors.Is(err, errNoClient) {
		t.Errorf("Acquire on New(nil) = %v; want errNoClient", err)
	}
	if _, err := d.AcquireWait(ctx, "k", newOwner(), time.Second); !errors.Is(err, errNoClient) {
		t.Errorf("AcquireWait on New(nil) = %v; want errNoClient", err)
	}
	if err := d.Close(); err != nil {
		t.Errorf("Close of New(nil) = %v", err)
	}
}

func TestNewDoesNotCloseTheClient(t *testing.T) {
	c := etcdtest.Start(t)
	cli := c.Client(t)
	d := New(cli)
	key, owner := testKey(t, "borrowed"), newOwner()
	if ok, err := d.Acquire(t.Context(), key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get(t.Context(), "anything"); err != nil {
		t.Fatalf("the client given to New failed after the Driver closed: %v", err)
	}
	if _, err := d.Exists(t.Context(), key); !errors.Is(err, ErrClosed) {
		t.Errorf("Exists after Close = %v; want ErrClosed", err)
	}
}

func TestPrefixPlacesTheKeys(t *testing.T) {
	c := etcdtest.Start(t)
	a := openDriver(t, c.URL(), WithPrefix("team-a/"))
	b := openDriver(t, c.URL()+"/?prefix=team-b/")
	ctx := t.Context()
	key := testKey(t, "shared-name")
	if ok, err := a.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire under team-a/ = %v, %v", ok, err)
	}
	if ok, err := b.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire of the same key under team-b/ = %v, %v; want true: prefixes separate locks", ok, err)
	}
	resp, err := c.Client(t).Get(ctx, "team-a/"+key)
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("Get(team-a/%s) = %v, %v; want the lock key", key, resp, err)
	}
}
