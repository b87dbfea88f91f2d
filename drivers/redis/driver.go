package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/zerotal/lock/driver"
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
	holderArg    any // "\npid\nhost", the end of every lock value
	retentionArg any // how long, in ms, a released lock keeps its last token; "0" for ever
	livenessArg  any // how long, in ms, a waiter's poll keeps it live
	noChannelArg any // "": a waiter that receives no notices

	scripts  scriptRunner
	waitPoll time.Duration
	grants   grantListener
	dials    *dialWatch // on clients Open made; nil otherwise

	closing   chan struct{} // closed by Close, to wake waiters
	closed    atomic.Bool
	closeOnce sync.Once

	// Leaves of the queue running in the background (see leave). leavesMu
	// orders starting one, and starting an AcquireWait, against Close's
	// waits for them.
	leavesCtx   context.Context
	leavesStop  context.CancelFunc
	leavesMu    sync.Mutex
	leavesDone  bool           // Close has waited for the leaves: start no more
	waitsDone   bool           // Close has begun: start no more waits
	leaves      sync.WaitGroup // every leave running
	firstLeaves sync.WaitGroup // leaves still in their first attempt

	// AcquireWait calls running, which Close lets leave the queue before
	// it cancels leaves and closes the client. Guarded by leavesMu.
	waits     int
	waitsIdle chan struct{} // made by Close while waits > 0; closed when they end
}

// Open connects to the Redis deployment rawURL names, in one of the forms
// OpenURL takes; an empty rawURL means $REDIS_URL.
func Open(rawURL string, opts ...Option) (*Driver, error) {
	u, err := envURL(rawURL)
	if err != nil {
		return nil, err
	}
	return OpenURL(u, opts...)
}

// OpenURL connects to the Redis deployment u names:
//
//   - redis://[user:password@]host[:port][/db], rediss://… for TLS, or
//     unix://[user:password@]/path/to/socket[?db=N]: one server;
//   - redis+sentinel://[user:password@]sentinel[:port][/db]?master_name=NAME,
//     with more sentinels as addr=host:port parameters (rediss+sentinel for
//     TLS): the primary that the sentinels name, followed across failovers
//     (the userinfo is the sentinels'; the primary's credentials are the
//     username= and password= parameters);
//   - redis+cluster://[user:password@]node[:port], with more seed nodes as
//     addr=host:port parameters (rediss+cluster for TLS): a Redis Cluster.
//
// go-redis's query options (dial_timeout, read_timeout, max_retries,
// pool_size, …) are accepted, each checked; an unknown one is refused. A
// URL that cannot be used gives an error wrapping driver.ErrBadURL that
// never contains a password. OpenURL does not contact the server: an
// unreachable one makes the first call fail. Close closes the client
// OpenURL made, which has go-redis's ContextTimeoutEnabled on, so that a
// call ends at its context's deadline. The first OpenURL silences
// go-redis's process-wide logger (see SetGoRedisLogging).
func OpenURL(u *url.URL, opts ...Option) (*Driver, error) {
	quietGoRedis()
	client, err := newClient(u)
	if err != nil {
		return nil, err
	}
	dials := new(dialWatch)
	if cc, ok := client.(*goredis.ClusterClient); ok {
		cc.OnNewNode(func(node *goredis.Client) { node.AddHook(dials) })
	} else {
		client.AddHook(dials)
	}
	d := New(client, append([]Option{WithSharedRoundTrips(true)}, opts...)...)
	d.ownsClient, d.dials = true, dials
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
	// A Ring publishes from a script on the key's shard but subscribes on
	// the channel's: notices could not arrive, so its waiters only poll.
	_, ring := c.(*goredis.Ring)
	d := &Driver{
		client:       c,
		holderArg:    "\n" + strconv.Itoa(os.Getpid()) + "\n" + strings.ReplaceAll(host, "\n", " "),
		retentionArg: strconv.FormatInt(cfg.fenceRetention.Milliseconds(), 10),
		livenessArg:  strconv.FormatInt((livenessPolls * cfg.waitPoll).Milliseconds(), 10),
		noChannelArg: "",
		waitPoll:     cfg.waitPoll,
		closing:      make(chan struct{}),
	}
	d.scripts.client = c
	if cl, ok := c.(*goredis.Client); ok && cfg.sharedRoundTrips {
		d.scripts.shared = sharedRoundTrips(cl)
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
	cmd := append(c.withLock(), &c.owner, &c.ttl, d.holderArg)
	token, err := d.scripts.run(ctx, acquireScript, c, cmd).Int64()
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
	cmd := append(c.withLock(), &c.owner, d.retentionArg)
	n, err := d.scripts.run(ctx, releaseScript, c, cmd).Int64()
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
	n, err := d.scripts.run(ctx, extendScript, c, append(c.withLock(), &c.owner, &c.ttl)).Int64()
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
	err := d.scripts.run(ctx, forceReleaseScript, c, append(c.withLock(), d.retentionArg)).Err()
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
	value, err := d.client.Do(ctx, append(c.cmd[:0], "get", &c.key)...).Text()
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
	reply, err := d.scripts.run(ctx, inspectScript, c, c.withLock()).Slice()
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
		d.waitsDone = true
		var idle chan struct{}
		if d.waits > 0 {
			idle = make(chan struct{})
			d.waitsIdle = idle
		}
		d.leavesMu.Unlock()
		bound := time.NewTimer(closeWaitBound)
		defer bound.Stop()
		if idle != nil {
			select {
			case <-idle: // every waiter has started its leave
			case <-bound.C:
			}
		}
		d.leavesMu.Lock()
		d.leavesDone = true
		d.leavesMu.Unlock()
		tried := make(chan struct{})
		go func() { d.firstLeaves.Wait(); close(tried) }()
		select {
		case <-tried: // every leave has had its first attempt
		case <-bound.C:
		}
		d.leavesStop() // ends the retries of leaves the server did not answer
		d.leaves.Wait()
		if d.ownsClient {
			err = d.client.Close()
		}
		d.scripts.close() // the client's close ended what they wait for
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

// fail wraps a failed call's error so that errors.Is finds ctx.Err() when the
// call failed because ctx ended (the error is the context's, or a timeout
// its deadline set off), and ErrClosed when the driver was closed meanwhile.
// Any other failure, such as a refused connection, is the server's even when
// ctx happened to end too: an outage must not read as the caller's deadline.
// So is a call that ran out of time because go-redis kept dialing a server
// that refused it.
func (d *Driver) fail(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil && !errors.Is(err, ctxErr) && endedByContext(err) {
		if down := d.unreachable(); down != nil {
			return fmt.Errorf("redis: %s: cannot reach the server: %w", op, down)
		}
		return fmt.Errorf("redis: %s: %w (%w)", op, ctxErr, err)
	}
	if cc, ok := d.client.(*goredis.ClusterClient); ok && !isServerError(err) {
		// A node that cannot be reached may have failed over: look for
		// the slots' new primaries now rather than at the next reload.
		cc.ReloadState(context.WithoutCancel(ctx))
	}
	if endedByContext(err) {
		if down := d.unreachable(); down != nil {
			return fmt.Errorf("redis: %s: cannot reach the server: %w", op, down)
		}
	}
	if d.closed.Load() {
		return fmt.Errorf("redis: %s: %w (%w)", op, ErrClosed, err)
	}
	return fmt.Errorf("redis: %s: %w", op, err)
}

// unreachable returns why the server cannot be reached, when the last
// attempt to connect to it failed.
func (d *Driver) unreachable() error {
	if d.dials == nil {
		return nil
	}
	return d.dials.unreachable()
}

// endedByContext reports whether err is what a call cut short by its
// context returns: the context's error, or a network timeout (go-redis sets
// the connection's deadlines from the context's).
func endedByContext(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || isTimeout(err)
}

// ttlMillis converts ttl to whole milliseconds for PX/PEXPIRE, rounding up
// so the server never keeps a lock for less than the caller asked.
func ttlMillis(ttl time.Duration) int64 {
	return max(int64((ttl+time.Millisecond-1)/time.Millisecond), 1)
}
