package redis

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

// noticeTimeout bounds the wait for a notice that must come.
const noticeTimeout = 10 * time.Second

// waitSubscribed waits until n connections listen on channel on s: a notice
// published before that is lost, as the contract allows.
func waitSubscribed(t *testing.T, s *server, channel string, n int64) {
	t.Helper()
	rc := goredis.NewClient(&goredis.Options{Addr: s.addr()})
	defer rc.Close()
	if !waitUntil(noticeTimeout, func() bool {
		counts, err := rc.PubSubNumSub(t.Context(), channel).Result()
		return err == nil && counts[channel] >= n
	}) {
		t.Fatalf("no %d subscriber(s) on %q after %v", n, channel, noticeTimeout)
	}
}

// expectNotice fails t unless notices delivers within noticeTimeout.
func expectNotice(t *testing.T, notices <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-notices:
	case <-time.After(noticeTimeout):
		t.Fatalf("no notice %s within %v", what, noticeTimeout)
	}
}

// cycle takes and releases key through d.
func cycle(t *testing.T, d *Driver, key string) {
	t.Helper()
	owner := newOwner()
	if ok, err := d.Acquire(t.Context(), key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire(%s) = %v, %v", key, ok, err)
	}
	if ok, err := d.Release(t.Context(), key, owner); err != nil || !ok {
		t.Fatalf("Release(%s) = %v, %v", key, ok, err)
	}
}

func TestNoticeOnReleaseFromAnotherDriver(t *testing.T) {
	s := startServer(t)
	waiter, holder := s.open(t), s.open(t)
	key := testKey(t, "notice")

	notices, cancel := waiter.Subscribe(key)
	defer cancel()
	waitSubscribed(t, s, DefaultChannel, 1)
	cycle(t, holder, key)
	expectNotice(t, notices, "after another driver's Release")

	ctx := t.Context()
	if ok, err := holder.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	if err := holder.ForceRelease(ctx, key); err != nil {
		t.Fatal(err)
	}
	expectNotice(t, notices, "after ForceRelease")
}

func TestNoticesReachOnlyTheirKey(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	a, b, c := testKey(t, "a"), testKey(t, "b"), testKey(t, "c")

	onA, cancelA := d.Subscribe(a)
	defer cancelA()
	onC, cancelC := d.Subscribe(c)
	defer cancelC()
	waitSubscribed(t, s, DefaultChannel, 1)

	// One connection delivers in order: once a's notice is here, b's has
	// been handled.
	cycle(t, d, b)
	cycle(t, d, a)
	expectNotice(t, onA, "for the released key")
	select {
	case <-onC:
		t.Fatal("a subscriber of c was woken by the release of b or a")
	default:
	}
}

func TestOneSubscriptionPerDriver(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	for i := range 50 {
		_, cancel := d.Subscribe(testKey(t, strings.Repeat("k", i%5+1)))
		defer cancel()
	}
	waitSubscribed(t, s, DefaultChannel, 1)
	list, err := rc.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(list, "sub=1"); n != 1 {
		t.Fatalf("%d connections are subscribed for 50 waiters; want 1:\n%s", n, list)
	}
}

func TestFullNoticeChannelDropsWithoutBlocking(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	key, probe := testKey(t, "full"), testKey(t, "probe")

	full, cancelFull := d.Subscribe(key)
	defer cancelFull()
	cancelled, cancel := d.Subscribe(key)
	cancel()
	cancel() // idempotent
	onProbe, cancelProbe := d.Subscribe(probe)
	defer cancelProbe()
	waitSubscribed(t, s, DefaultChannel, 1)

	for range 5 {
		cycle(t, d, key)
	}
	cycle(t, d, probe)
	expectNotice(t, onProbe, "after five unread notices on another key")
	if n := len(full); n != 1 {
		t.Fatalf("unread subscriber holds %d notices; want 1 (later ones dropped)", n)
	}
	if n := len(cancelled); n != 0 {
		t.Fatalf("a cancelled subscriber got %d notices", n)
	}
}

func TestNoticesResumeAfterServerRestart(t *testing.T) {
	s := startServer(t)
	waiter, holder := s.open(t), s.open(t)
	key := testKey(t, "restart")

	notices, cancel := waiter.Subscribe(key)
	defer cancel()
	waitSubscribed(t, s, DefaultChannel, 1)
	s.restart(t)
	// go-redis reconnects the pub/sub connection and subscribes again.
	waitSubscribed(t, s, DefaultChannel, 1)
	cycle(t, holder, key)
	expectNotice(t, notices, "after the server restarted")
}

func TestWithChannel(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	waiter := New(rc, WithChannel("app1:released"))
	defer waiter.Close()
	other := New(rc) // DefaultChannel: its releases do not reach waiter
	defer other.Close()
	holder := New(rc, WithChannel("app1:released"))
	defer holder.Close()
	key := testKey(t, "channel")

	notices, cancel := waiter.Subscribe(key)
	defer cancel()
	waitSubscribed(t, s, "app1:released", 1)
	cycle(t, other, key)
	cycle(t, holder, key)
	expectNotice(t, notices, "on the configured channel")
	select {
	case <-notices:
		t.Fatal("a release on DefaultChannel reached a driver listening on app1:released")
	default:
	}
}

func TestCloseStopsListenerAndKeepsCallersClient(t *testing.T) {
	s := startServer(t)
	rc := s.client(t)
	ctx := t.Context()
	if err := rc.Ping(ctx).Err(); err != nil { // the pool's goroutines start now
		t.Fatal(err)
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	d := New(rc)
	_, cancel := d.Subscribe(testKey(t, "close"))
	waitSubscribed(t, s, DefaultChannel, 1)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	cancel() // after Close, still safe
	if err := rc.Ping(ctx).Err(); err != nil {
		t.Fatalf("Close closed a client it did not create: %v", err)
	}
	notices, cancel := d.Subscribe("after-close")
	cancel()
	if notices == nil {
		t.Fatal("Subscribe after Close returned a nil channel")
	}
	if _, err := d.Acquire(ctx, "k", newOwner(), time.Second); err == nil {
		t.Fatal("Acquire after Close succeeded")
	}
}

func TestCloseClosesOwnClient(t *testing.T) {
	s := startServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	d, err := Open(s.url())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := testKey(t, "own")
	if ok, err := d.Acquire(ctx, key, newOwner(), time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	_, cancel := d.Subscribe(key)
	defer cancel()
	waitSubscribed(t, s, DefaultChannel, 1)
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, err := range map[string]error{
		"Acquire": func() error { _, err := d.Acquire(ctx, key, newOwner(), time.Second); return err }(),
		"Release": func() error { _, err := d.Release(ctx, key, newOwner()); return err }(),
		"Extend":  func() error { _, err := d.Extend(ctx, key, newOwner(), time.Second); return err }(),
		"Exists":  func() error { _, err := d.Exists(ctx, key); return err }(),
		"Inspect": func() error { _, _, err := d.Inspect(ctx, key); return err }(),
		"Force":   d.ForceRelease(ctx, key),
	} {
		if err != ErrClosed {
			t.Errorf("%s after Close = %v; want ErrClosed", name, err)
		}
	}
	// The client Open made is closed: its connections are gone.
	rc := s.client(t)
	others := func() []string {
		list, err := rc.ClientList(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		var rest []string
		for line := range strings.Lines(list) {
			if !strings.Contains(line, "cmd=client|list") {
				rest = append(rest, line)
			}
		}
		return rest
	}
	if !waitUntil(5*time.Second, func() bool { return len(others()) == 0 }) {
		t.Fatalf("connections remain after Close: %q", others())
	}
}

func TestFirstSubscribeIsActiveOnReturn(t *testing.T) {
	s := startServer(t)
	waiter, holder := s.open(t), s.open(t)
	key := testKey(t, "first")
	// No waiting for the server here: the engine subscribes, tries and
	// waits, and a release right after the subscribe must reach it.
	notices, cancel := waiter.Subscribe(key)
	defer cancel()
	cycle(t, holder, key)
	expectNotice(t, notices, "on the first subscription of a driver")
}

func TestSubscribeDoesNotWaitForARefusedConnection(t *testing.T) {
	port, err := freePort() // nothing listens here
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port)})
	defer c.Close()
	d := New(c)
	defer d.Close()
	start := time.Now()
	_, cancel := d.Subscribe("k")
	defer cancel()
	if elapsed := time.Since(start); elapsed >= subscribeWait {
		t.Fatalf("Subscribe took %v with the connection refused; want less than subscribeWait (%v)", elapsed, subscribeWait)
	}
}

func TestSubscribeWaitIsBoundedOnASilentServer(t *testing.T) {
	// A server that accepts connections and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, conn)
		}
	}()
	defer func() {
		_ = ln.Close()
		<-accepted
		for _, conn := range conns {
			_ = conn.Close()
		}
	}()

	c := goredis.NewClient(&goredis.Options{Addr: ln.Addr().String(), ReadTimeout: time.Second})
	defer c.Close()
	d := New(c)
	start := time.Now()
	_, cancel := d.Subscribe("k")
	defer cancel()
	if elapsed := time.Since(start); elapsed < subscribeWait || elapsed > subscribeWait+5*time.Second {
		t.Fatalf("Subscribe on a silent server took %v; want about subscribeWait (%v)", elapsed, subscribeWait)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}
