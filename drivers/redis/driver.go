package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/core/driver"
)

// ErrClosed is returned by every method of a Driver after Close.
var ErrClosed = errors.New("redis: driver is closed")

// errOwnerNewline is returned for an owner with a newline, which would make
// the lock value ambiguous; the engine's owners are hex digits.
var errOwnerNewline = errors.New("redis: owner contains a newline")

// errNoClient is returned by every method of a Driver made by New with a nil
// client.
var errNoClient = errors.New("redis: driver has no client (New was given nil)")

// The capabilities the engine discovers by type assertion.
var (
	_ driver.Driver    = (*Driver)(nil)
	_ driver.Extender  = (*Driver)(nil)
	_ driver.Fencer    = (*Driver)(nil)
	_ driver.Inspector = (*Driver)(nil)
	_ driver.Waiter    = (*Driver)(nil)
)

// Driver is a lock backend on one Redis deployment, reached through a go-redis
// client. It implements [driver.Driver], [driver.Extender], [driver.Fencer],
// [driver.Inspector] and [driver.Waiter]. It is safe for concurrent use.
type Driver struct {
	client     goredis.UniversalClient
	ownsClient bool // Open made client, so Close closes it

	// Script arguments that are the same on every call, boxed once so that
	// calls do not allocate for them.
	holderArg    any // "pid\nhost", the end of every lock value
	retentionArg any // how long, in ms, a released lock keeps its last token; "0" for ever
	numsubArg    any // "1" when scripts may judge waiters by PUBSUB NUMSUB
	livenessArg  any // how long, in ms, a waiter's poll keeps it live
	noChannelArg any // "": a waiter that receives no notices

	waitPoll time.Duration
	grants   grantListener

	closing   chan struct{} // closed by Close, to wake waiters
	closed    atomic.Bool
	closeOnce sync.Once

	// Background retries of leaveScript for waits whose leave failed.
	// leavesMu orders starting one, and starting an AcquireWait, against
	// Close's wait for them.
	leavesCtx  context.Context
	leavesStop context.CancelFunc
	leavesMu   sync.Mutex
	leavesDone bool // Close has begun waiting: start no more
	leaves     sync.WaitGroup

	// AcquireWait calls running, which Close lets leave the queue before
	// it cancels leaves and closes the client. Guarded by leavesMu.
	waits     int
	waitsIdle chan struct{} // made by Close while waits > 0; closed when they end
}

// Open connects to the Redis server that url names: redis://host:port/db,
// rediss:// for TLS, or unix:///path/to/socket?db=N, each with optional
// user:password@. An empty url means $REDIS_URL. go-redis's query options
// (dial_timeout, max_retries, …) are accepted too.
//
// A URL that cannot be used gives an error wrapping [ErrBadURL] that never
// contains the password. Open does not contact the server: an unreachable
// server makes the first call fail. Close closes the client Open made.
func Open(url string, opts ...Option) (*Driver, error) {
	copts, err := clientOptions(url)
	if err != nil {
		return nil, err
	}
	// Without this go-redis ignores ctx deadlines and waits for its own
	// read timeout; the driver contract wants calls to end with ctx.
	copts.ContextTimeoutEnabled = true
	d := New(goredis.NewClient(copts), opts...)
	d.ownsClient = true
	return d, nil
}

// New returns a Driver on a client the caller already has: a *redis.Client,
// a *redis.ClusterClient, a sentinel-backed failover client or a
// *redis.Ring. Close does not close c; the caller still owns it.
//
// Every script touches keys of one hash slot, so cluster clients work as
// they are. Locks are only as safe as the deployment: see the package
// documentation on replication and failover.
func New(c goredis.UniversalClient, opts ...Option) *Driver {
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	host, _ := os.Hostname() // an unknown host is recorded as ""
	// A Client (standalone or sentinel) runs scripts and pub/sub on one
	// server, which can count a Driver's subscription; a cluster node
	// counts only its own subscribers.
	_, single := c.(*goredis.Client)
	// A Ring publishes from a script on the key's shard but subscribes on
	// the channel's: notices could not arrive, so its waiters only poll.
	_, ring := c.(*goredis.Ring)
	numsub := "0"
	if single {
		numsub = "1"
	}
	d := &Driver{
		client:       c,
		holderArg:    strconv.Itoa(os.Getpid()) + "\n" + strings.ReplaceAll(host, "\n", " "),
		retentionArg: strconv.FormatInt(cfg.fenceRetention.Milliseconds(), 10),
		numsubArg:    numsub,
		livenessArg:  strconv.FormatInt((livenessPolls * cfg.waitPoll).Milliseconds(), 10),
		noChannelArg: "",
		waitPoll:     cfg.waitPoll,
		closing:      make(chan struct{}),
	}
	d.leavesCtx, d.leavesStop = context.WithCancel(context.Background())
	var listenOn goredis.UniversalClient
	if c != nil && !ring {
		listenOn = c
	}
	d.grants.init(listenOn, cfg.channelPrefix+randomID())
	return d
}

// randomID returns 64 random bits in hex, to name a Driver's channel.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// Acquire takes key for owner for ttl, or resets the TTL if owner holds it
// already, in one round trip. A free key that waiters queued for goes to the
// first of them, not to Acquire.
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	token, err := d.acquire(ctx, key, owner, ttl)
	return token != 0, err
}

// AcquireFenced is Acquire that also returns the acquisition's fencing token.
// Tokens are drawn from the server: see [WithFenceRetention] for what they
// rely on.
func (d *Driver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	token, err := d.acquire(ctx, key, owner, ttl)
	return token, token != 0, err
}

// acquire runs acquireScript and returns the token, 0 when the key is not
// free for owner.
func (d *Driver) acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.usableFor(ctx, owner); err != nil {
		return 0, err
	}
	c := getCall(key, owner)
	c.ttl = ttlMillis(ttl)
	cmd := append(c.withAllKeys(), &c.owner, &c.ttl, d.holderArg, d.numsubArg)
	token, err := acquireScript.run(ctx, d.client, cmd).Int64()
	c.put()
	if err != nil {
		return 0, d.fail(ctx, "acquire", err)
	}
	if token < 0 {
		return 0, fmt.Errorf("redis: acquire: server returned token %d", token)
	}
	return uint64(token), nil
}

// Release frees key if owner holds it, handing it to the first queued
// waiter if there is one, in one round trip.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.usableFor(ctx, owner); err != nil {
		return false, err
	}
	c := getCall(key, owner)
	cmd := append(c.withAllKeys(), &c.owner, d.numsubArg, d.retentionArg)
	n, err := releaseScript.run(ctx, d.client, cmd).Int64()
	c.put()
	if err != nil {
		return false, d.fail(ctx, "release", err)
	}
	return n == 1, nil
}

// Extend sets key's TTL to ttl from now, by the server's clock, if owner
// holds it; it never takes a free key.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.usableFor(ctx, owner); err != nil {
		return false, err
	}
	c := getCall(key, owner)
	c.ttl = ttlMillis(ttl)
	n, err := extendScript.run(ctx, d.client, append(c.withLock(), &c.owner, &c.ttl)).Int64()
	c.put()
	if err != nil {
		return false, d.fail(ctx, "extend", err)
	}
	return n == 1, nil
}

// ForceRelease frees key whoever holds it, handing it to the first queued
// waiter if there is one.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.usable(ctx); err != nil {
		return err
	}
	c := getCall(key, "")
	err := forceReleaseScript.run(ctx, d.client, append(c.withAllKeys(), d.numsubArg, d.retentionArg)).Err()
	c.put()
	if err != nil {
		return d.fail(ctx, "force release", err)
	}
	return nil
}

// Exists reports whether key is held, by one GET: the server has already
// dropped an expired lock, and a released one is a tombstone.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.usable(ctx); err != nil {
		return false, err
	}
	c := getCall(key, "")
	value, err := d.client.Do(ctx, append(c.cmd[:0], "get", &c.keys[0])...).Text()
	c.put()
	switch {
	case errors.Is(err, goredis.Nil):
		return false, nil
	case err != nil:
		return false, d.fail(ctx, "exists", err)
	}
	return !strings.HasPrefix(value, tombstoneFlag), nil
}

// tombstoneFlag starts the value of a released lock (see scripts.go).
const tombstoneFlag = "~"

// Inspect returns key's holder in one round trip. AcquiredAt and ExpiresAt
// are read on the server's clock.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if err := d.usable(ctx); err != nil {
		return driver.Holder{}, false, err
	}
	c := getCall(key, "")
	reply, err := inspectScript.run(ctx, d.client, c.withLock()).Slice()
	c.put()
	if errors.Is(err, goredis.Nil) {
		return driver.Holder{}, false, nil
	}
	if err != nil {
		return driver.Holder{}, false, d.fail(ctx, "inspect", err)
	}
	h, err := parseHolder(reply)
	if err != nil {
		return driver.Holder{}, false, fmt.Errorf("redis: inspect: %w", err)
	}
	return h, true, nil
}

// Close wakes every waiter (their AcquireWait returns ErrClosed) and waits,
// up to closeWaitBound, for them to leave the queue, so that a key handed to
// one meanwhile is passed on rather than held by nobody for its TTL. It then
// stops the notice listener and, if Open made the client, closes it. It
// returns the client's close error the first time and nil after that. Locks
// still held stay until their TTL.
func (d *Driver) Close() error {
	var err error
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		close(d.closing)
		d.grants.close()
		d.leavesMu.Lock()
		d.leavesDone = true
		var idle chan struct{}
		if d.waits > 0 {
			idle = make(chan struct{})
			d.waitsIdle = idle
		}
		d.leavesMu.Unlock()
		if idle != nil {
			t := time.NewTimer(closeWaitBound)
			select {
			case <-idle:
			case <-t.C:
			}
			t.Stop()
		}
		d.leavesStop()
		d.leaves.Wait()
		if d.ownsClient {
			err = d.client.Close()
		}
	})
	return err
}

// usable returns the error a call must give before it reaches the server.
func (d *Driver) usable(ctx context.Context) error {
	switch {
	case d.closed.Load():
		return ErrClosed
	case d.client == nil:
		return errNoClient
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	return nil
}

// usableFor is usable for a call that names an owner.
func (d *Driver) usableFor(ctx context.Context, owner string) error {
	if strings.IndexByte(owner, '\n') >= 0 {
		return errOwnerNewline
	}
	return d.usable(ctx)
}

// fail wraps a failed call's error so that errors.Is finds ctx.Err() when ctx
// ended and ErrClosed when the driver was closed meanwhile.
func (d *Driver) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) {
		return fmt.Errorf("redis: %s: %w (%w)", op, ctxErr, err)
	}
	if d.closed.Load() {
		return fmt.Errorf("redis: %s: %w (%w)", op, ErrClosed, err)
	}
	return fmt.Errorf("redis: %s: %w", op, err)
}

// ttlMillis converts ttl to whole milliseconds for PX/PEXPIRE, rounding up
// so the server never keeps a lock for less than the caller asked.
func ttlMillis(ttl time.Duration) int64 {
	return max(int64((ttl+time.Millisecond-1)/time.Millisecond), 1)
}
