package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"

	lock "github.com/zerotal/lock/sdk/go"

	redisdriver "github.com/zerotal/lock/drivers/redis"
)

// lockTTL is the TTL every library's locks get: far longer than a hold, so
// that no lock expires in the benchmark and every hand-off is a release.
const lockTTL = 10 * time.Second

// bareRelease is the usual compare-and-delete for a plain string lock: what
// a go-redis user writes next to SET NX PX.
var bareRelease = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
	return redis.call('DEL', KEYS[1])
end
return 0
`)

// errNotReleased is returned by a release that found the key not held by the
// caller: in this benchmark, a bug.
var errNotReleased = errors.New("release found the lock not held by its owner")

// randomValue returns 128 random bits in hex, a lock value for the bare
// loops.
func randomValue() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// cycler is one library's uncontended acquire+release, on a key and a client
// of its own.
type cycler struct {
	name  string
	short string // for benchmark names
	role  cyclerRole
	cycle func(ctx context.Context) error
	close func()
}

// cyclerRole says what a cycler stands for in the targets.
type cyclerRole int

const (
	roleBare   cyclerRole = iota // the baseline of the ratios
	roleFloor                    // the cheapest acquire a Lua script can do
	roleDriver                   // the driver the targets are about
	roleAPI                      // the public API over the driver
	rolePeer                     // another library, which the driver must match
)

// floorAcquire is SET NX PX inside a script: no script-based acquire can be
// cheaper, so its row shows how close to the bare pair any of them can get.
var floorAcquire = redis.NewScript(`return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`)

// cyclers returns the libraries of the uncontended benchmark, each on a new
// client on s, in table order. The first is the baseline: the bare go-redis
// pair.
func cyclers(s *server, prefix string) []cycler {
	var out []cycler

	{
		c := s.newClient(nil)
		key, value := prefix+"bare", randomValue()
		out = append(out, cycler{"go-redis SET NX PX + EVALSHA del (bare)", "bare", roleBare, func(ctx context.Context) error {
			ok, err := c.SetNX(ctx, key, value, lockTTL).Result()
			if err != nil || !ok {
				return errors.Join(err, errors.New("the key was held: SET NX did not set it"))
			}
			n, err := bareRelease.Run(ctx, c, []string{key}, value).Int64()
			if err != nil || n != 1 {
				return errors.Join(err, errNotReleased)
			}
			return nil
		}, func() { _ = c.Close() }})
	}
	{
		c := s.newClient(nil)
		key, value := prefix+"floor", randomValue()
		ttl := lockTTL.Milliseconds()
		out = append(out, cycler{"floor: EVALSHA SET NX PX + EVALSHA del", "floor", roleFloor, func(ctx context.Context) error {
			if err := floorAcquire.Run(ctx, c, []string{key}, value, ttl).Err(); err != nil {
				return errors.Join(err, errors.New("the key was held: SET NX did not set it"))
			}
			n, err := bareRelease.Run(ctx, c, []string{key}, value).Int64()
			if err != nil || n != 1 {
				return errors.Join(err, errNotReleased)
			}
			return nil
		}, func() { _ = c.Close() }})
	}
	{
		d := s.openDriver()
		key, owner := prefix+"driver", randomValue()
		out = append(out, cycler{"zerotal driver: Acquire + Release", "driver", roleDriver, func(ctx context.Context) error {
			ok, err := d.Acquire(ctx, key, owner, lockTTL)
			if err != nil || !ok {
				return errors.Join(err, errors.New("the key was held: Acquire did not take it"))
			}
			ok, err = d.Release(ctx, key, owner)
			if err != nil || !ok {
				return errors.Join(err, errNotReleased)
			}
			return nil
		}, func() { _ = d.Close() }})
	}
	{
		m := lock.New(s.openDriver())
		l := m.Make(prefix+"api", lockTTL)
		out = append(out, cycler{"zerotal lock: Make(key).Acquire + Release", "api", roleAPI, func(ctx context.Context) error {
			ok, err := l.Acquire(ctx)
			if err != nil || !ok {
				return errors.Join(err, errors.New("the key was held: Acquire did not take it"))
			}
			return l.Release(ctx)
		}, func() { _ = m.Close() }})
	}
	{
		m := lock.New(s.openDriver())
		key := prefix + "try"
		noop := func(context.Context) error { return nil }
		out = append(out, cycler{"zerotal lock: Try(key, fn)", "try", roleAPI, func(ctx context.Context) error {
			return m.Try(ctx, key, lockTTL, noop)
		}, func() { _ = m.Close() }})
	}
	{
		c := s.newClient(nil)
		rs := redsync.New(redsyncgoredis.NewPool(c))
		mu := rs.NewMutex(prefix+"redsync", redsync.WithExpiry(lockTTL), redsync.WithTries(1))
		out = append(out, cycler{"redsync v4: Lock + Unlock", "redsync", rolePeer, func(ctx context.Context) error {
			if err := mu.LockContext(ctx); err != nil {
				return err
			}
			ok, err := mu.UnlockContext(ctx)
			if err != nil || !ok {
				return errors.Join(err, errNotReleased)
			}
			return nil
		}, func() { _ = c.Close() }})
	}
	{
		c := s.newClient(nil)
		rl := redislock.New(c)
		key := prefix + "redislock"
		out = append(out, cycler{"bsm/redislock: Obtain + Release", "redislock", rolePeer, func(ctx context.Context) error {
			l, err := rl.Obtain(ctx, key, lockTTL, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}, func() { _ = c.Close() }})
	}
	{
		rl, err := newRueidisLocker(s)
		key := prefix + "rueidislock"
		out = append(out, cycler{"rueidislock: TryWithContext + cancel", "rueidislock", rolePeer, func(ctx context.Context) error {
			if err != nil {
				return err
			}
			_, release, err := rl.TryWithContext(ctx, key)
			if err != nil {
				return err
			}
			release()
			return nil
		}, func() {
			if rl != nil {
				rl.Close()
			}
		}})
	}
	return out
}

// contender is one library of the contention benchmark: it makes each
// worker a locker on a client of its own, which counts its round trips into
// sent. close releases what the locker holds on to.
type contender struct {
	name      string
	newLocker func(s *server, key string, sent *commandCounter) (l locker, close func())
}

// contenders returns the libraries of the contention benchmark in table
// order. barePoll is the bare loop's sleep between attempts, redislockPoll
// redislock's linear backoff, redsyncDelay the tuned redsync retry delay.
func contenders(barePoll, redislockPoll, redsyncDelay time.Duration) []contender {
	return []contender{
		{"zerotal lock: Make(key).Block", func(s *server, key string, sent *commandCounter) (locker, func()) {
			c := s.newClient(sent)
			m := lock.New(redisdriver.New(c))
			return zerotalLocker{m.Make(key, lockTTL)}, func() { _ = m.Close(); _ = c.Close() }
		}},
		{"redsync v4: Lock, defaults", func(s *server, key string, sent *commandCounter) (locker, func()) {
			c := s.newClient(sent)
			rs := redsync.New(redsyncgoredis.NewPool(c))
			return redsyncLocker{rs.NewMutex(key, redsync.WithExpiry(lockTTL))}, func() { _ = c.Close() }
		}},
		{"redsync v4: Lock, retry delay " + redsyncDelay.String(), func(s *server, key string, sent *commandCounter) (locker, func()) {
			c := s.newClient(sent)
			rs := redsync.New(redsyncgoredis.NewPool(c))
			mu := rs.NewMutex(key, redsync.WithExpiry(lockTTL), redsync.WithRetryDelay(redsyncDelay), redsync.WithTries(1<<30))
			return redsyncLocker{mu}, func() { _ = c.Close() }
		}},
		{"bsm/redislock: Obtain, LinearBackoff(" + redislockPoll.String() + ")", func(s *server, key string, sent *commandCounter) (locker, func()) {
			c := s.newClient(sent)
			return &redislockLocker{client: redislock.New(c), key: key, backoff: redislockPoll}, func() { _ = c.Close() }
		}},
		{"rueidislock: WithContext", func(s *server, key string, sent *commandCounter) (locker, func()) {
			rl, err := newRueidisLocker(s)
			if err != nil {
				return failedLocker{err}, func() {}
			}
			return &rueidisLocker{locker: rl, key: key}, rl.Close
		}},
		{"go-redis SET NX PX loop, " + barePoll.String() + " sleep (bare)", func(s *server, key string, sent *commandCounter) (locker, func()) {
			c := s.newClient(sent)
			return &bareLocker{client: c, key: key, poll: barePoll}, func() { _ = c.Close() }
		}},
	}
}

// zerotalLocker blocks in the engine, which waits in the Redis driver's
// queue.
type zerotalLocker struct{ l *lock.ManagedLock }

func (z zerotalLocker) Lock(ctx context.Context) error {
	for {
		err := z.l.Block(ctx, lock.WithTimeout(time.Minute))
		var late *lock.NotAcquiredError
		if !errors.As(err, &late) || ctx.Err() != nil {
			return err
		}
	}
}

func (z zerotalLocker) Unlock(ctx context.Context) error { return z.l.Release(ctx) }

// redsyncLocker calls Lock again whenever redsync's own tries run out.
type redsyncLocker struct{ m *redsync.Mutex }

func (r redsyncLocker) Lock(ctx context.Context) error {
	for {
		err := r.m.LockContext(ctx)
		var taken *redsync.ErrTaken
		switch {
		case err == nil:
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, redsync.ErrFailed), errors.As(err, &taken):
			continue
		default:
			return err
		}
	}
}

func (r redsyncLocker) Unlock(ctx context.Context) error {
	ok, err := r.m.UnlockContext(ctx)
	if err != nil || !ok {
		return errors.Join(err, errNotReleased)
	}
	return nil
}

// redislockLocker calls Obtain again whenever its retry deadline (the TTL,
// for a ctx without one) passes.
type redislockLocker struct {
	client  *redislock.Client
	key     string
	backoff time.Duration
	held    *redislock.Lock
}

func (r *redislockLocker) Lock(ctx context.Context) error {
	opts := &redislock.Options{RetryStrategy: redislock.LinearBackoff(r.backoff)}
	for {
		l, err := r.client.Obtain(ctx, r.key, lockTTL, opts)
		switch {
		case err == nil:
			r.held = l
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, redislock.ErrNotObtained):
			continue
		default:
			return err
		}
	}
}

func (r *redislockLocker) Unlock(ctx context.Context) error {
	l := r.held
	r.held = nil
	if l == nil {
		return errNotReleased
	}
	return l.Release(ctx)
}

// bareLocker is the loop a go-redis user writes by hand: SET NX PX, sleep,
// again.
type bareLocker struct {
	client *redis.Client
	key    string
	poll   time.Duration
	value  string
}

func (b *bareLocker) Lock(ctx context.Context) error {
	value := randomValue()
	var timer *time.Timer
	for {
		ok, err := b.client.SetNX(ctx, b.key, value, lockTTL).Result()
		if err != nil {
			return err
		}
		if ok {
			b.value = value
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		if timer == nil {
			timer = time.NewTimer(b.poll)
		} else {
			timer.Reset(b.poll)
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
	}
}

func (b *bareLocker) Unlock(ctx context.Context) error {
	n, err := bareRelease.Run(ctx, b.client, []string{b.key}, b.value).Int64()
	if err != nil || n != 1 {
		return errors.Join(err, errNotReleased)
	}
	return nil
}

// parallelCyclers returns the libraries of the distinct-keys benchmark, each
// with one client on s that all its goroutines share. The first is the
// baseline: the bare go-redis pair.
func parallelCyclers(s *server) []parallelCycler {
	var out []parallelCycler
	{
		c := s.newClient(nil)
		out = append(out, parallelCycler{"go-redis SET NX PX + EVALSHA del (bare)", roleBare, func(key string) func(context.Context) error {
			value := randomValue()
			return func(ctx context.Context) error {
				ok, err := c.SetNX(ctx, key, value, lockTTL).Result()
				if err != nil || !ok {
					return errors.Join(err, errors.New("the key was held: SET NX did not set it"))
				}
				n, err := bareRelease.Run(ctx, c, []string{key}, value).Int64()
				if err != nil || n != 1 {
					return errors.Join(err, errNotReleased)
				}
				return nil
			}
		}, func() { _ = c.Close() }})
	}
	{
		d := s.openDriver()
		out = append(out, parallelCycler{"zerotal driver: Acquire + Release", roleDriver, func(key string) func(context.Context) error {
			owner := randomValue()
			return func(ctx context.Context) error {
				ok, err := d.Acquire(ctx, key, owner, lockTTL)
				if err != nil || !ok {
					return errors.Join(err, errors.New("the key was held: Acquire did not take it"))
				}
				ok, err = d.Release(ctx, key, owner)
				if err != nil || !ok {
					return errors.Join(err, errNotReleased)
				}
				return nil
			}
		}, func() { _ = d.Close() }})
	}
	{
		m := lock.New(s.openDriver())
		noop := func(context.Context) error { return nil }
		out = append(out, parallelCycler{"zerotal lock: Try(key, fn)", roleAPI, func(key string) func(context.Context) error {
			return func(ctx context.Context) error { return m.Try(ctx, key, lockTTL, noop) }
		}, func() { _ = m.Close() }})
	}
	{
		c := s.newClient(nil)
		rs := redsync.New(redsyncgoredis.NewPool(c))
		out = append(out, parallelCycler{"redsync v4: Lock + Unlock", rolePeer, func(key string) func(context.Context) error {
			mu := rs.NewMutex(key, redsync.WithExpiry(lockTTL), redsync.WithTries(1))
			return func(ctx context.Context) error {
				if err := mu.LockContext(ctx); err != nil {
					return err
				}
				ok, err := mu.UnlockContext(ctx)
				if err != nil || !ok {
					return errors.Join(err, errNotReleased)
				}
				return nil
			}
		}, func() { _ = c.Close() }})
	}
	{
		c := s.newClient(nil)
		rl := redislock.New(c)
		out = append(out, parallelCycler{"bsm/redislock: Obtain + Release", rolePeer, func(key string) func(context.Context) error {
			return func(ctx context.Context) error {
				l, err := rl.Obtain(ctx, key, lockTTL, nil)
				if err != nil {
					return err
				}
				return l.Release(ctx)
			}
		}, func() { _ = c.Close() }})
	}
	if rl, err := newRueidisLocker(s); err != nil {
		out = append(out, parallelCycler{"rueidislock: TryWithContext + cancel", rolePeer, func(string) func(context.Context) error {
			return func(context.Context) error { return err }
		}, func() {}})
	} else {
		out = append(out, parallelCycler{"rueidislock: TryWithContext + cancel", rolePeer, func(key string) func(context.Context) error {
			return func(ctx context.Context) error {
				_, release, err := rl.TryWithContext(ctx, key)
				if err != nil {
					return err
				}
				release()
				return nil
			}
		}, rl.Close})
	}
	return out
}

// newRueidisLocker returns a rueidislock Locker on s with one key per lock
// (KeyMajority 1, the single-instance lock the others are) and the TTL the
// others get, extended in the background as rueidislock always does.
func newRueidisLocker(s *server) (rueidislock.Locker, error) {
	return rueidislock.NewLocker(rueidislock.LockerOption{
		ClientOption: rueidis.ClientOption{InitAddress: []string{s.addr()}},
		KeyMajority:  1,
		KeyValidity:  lockTTL,
		// Ample for a server slowed down by a profiler; with one key it
		// only bounds an attempt.
		TryNextAfter: time.Second,
		// Redis 7.0.5 and later: no invalidation of the client's own writes.
		NoLoopTracking: true,
	})
}

// rueidisLocker waits in rueidislock, which waits for the key's
// invalidation (client-side caching) and retries.
type rueidisLocker struct {
	locker  rueidislock.Locker
	key     string
	release context.CancelFunc
}

func (r *rueidisLocker) Lock(ctx context.Context) error {
	_, release, err := r.locker.WithContext(ctx, r.key)
	if err != nil {
		return err
	}
	r.release = release
	return nil
}

func (r *rueidisLocker) Unlock(context.Context) error {
	release := r.release
	r.release = nil
	if release == nil {
		return errNotReleased
	}
	release()
	return nil
}

// failedLocker is a contender that could not be set up.
type failedLocker struct{ err error }

func (f failedLocker) Lock(context.Context) error   { return f.err }
func (f failedLocker) Unlock(context.Context) error { return f.err }
