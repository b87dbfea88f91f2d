package redis

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const (
	// leaveTimeout bounds one leaveScript call made after a wait ended.
	leaveTimeout = 2 * time.Second
	// leaveRetries is how many more times a failed leave is tried in the
	// background, leaveTimeout apart at most, before the waiter's record is
	// left to its liveness check.
	leaveRetries = 10
	// closeWaitBound bounds how long Close waits for woken waiters to
	// leave: one attempt already in flight and then the leave itself.
	closeWaitBound = 2 * leaveTimeout
	// expiryMargin is added to the holder's remaining TTL when the first
	// waiter schedules its poll, so that the key has expired by then.
	expiryMargin = time.Millisecond
)

// AcquireWait takes key for owner for ttl, waiting in a FIFO queue kept on
// the server as long as ctx allows. Each attempt is one round trip: it takes
// the key when it is free and no live waiter is ahead, and queues owner
// otherwise. The key is handed over on the server when its holder releases
// it (or when anyone finds it free after its holder expired), and the new
// holder learns so from a notice on its Driver's channel, or from its next
// poll: every [WithWaitPoll] interval, and when the holder's TTL ends for the
// first in line.
//
// A waiter whose ctx ends, or whose Driver closes, returns at once and
// leaves the queue in the background; a key handed to it in the meantime is
// passed on to the next waiter. When ctx ends before the server has answered
// even the first attempt, the error says so and does not wrap ctx's: the
// server not answering is an outage, not a wait.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.usableFor(ctx, owner); err != nil {
		return 0, err
	}
	if !d.startWait() {
		return 0, ErrClosed
	}
	defer d.endWait()
	c := newCall(key, owner)
	c.ttl = ttlMillis(ttl)
	slot := d.grants.register(c.lockKey(), owner)
	defer d.grants.unregister(slot)

	// A waiter queues under its channel once the server has confirmed the
	// subscription, which its first queued attempt starts (see grants.go):
	// until then it queues without one and polls. sub is nil before that
	// attempt and for a Driver that gets no notices; ready is the
	// confirmation still awaited.
	channel := d.noChannelArg
	sub := d.grants.current(c.lockKey()) // a confirmed channel another wait opened
	if sub != nil {
		channel = sub.arg
	}
	subscribed := sub != nil
	var ready <-chan struct{}
	defer func() { d.grants.unsubscribe(sub) }()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	answered := false
	for {
		if isClosed(d.closing) {
			// Close is waiting for this waiter to leave; another
			// attempt would only keep it waiting longer.
			d.leave(c)
			return 0, ErrClosed
		}
		token, pttl, first, err := d.waitAttempt(ctx, c, channel)
		if err != nil {
			// The script may have run before the call failed: owner
			// may be queued, or even hold the key.
			d.leave(c)
			err = d.fail(ctx, "acquire", err)
			if !answered && errors.Is(err, context.DeadlineExceeded) {
				// The wait ran out with no answer at all: an outage,
				// not contention. A caller that cancelled gets its
				// ctx's error.
				return 0, fmt.Errorf("redis: acquire: no answer from the server before the wait ended (%v)", err)
			}
			return 0, err
		}
		answered = true
		if token != 0 {
			return token, nil
		}
		if !subscribed {
			subscribed = true
			if sub = d.grants.subscribe(ctx, c.lockKey()); sub != nil {
				ready = sub.ready
			}
		}
		if ready != nil && isClosed(ready) {
			// Queue again under the channel, so that hand-offs
			// notify this waiter and its liveness follows its Driver.
			channel, ready = sub.arg, nil
			continue
		}
		wait := d.waitPoll
		if first && pttl > 0 {
			wait = min(wait, time.Duration(pttl)*time.Millisecond+expiryMargin)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case g := <-slot.granted:
			if !g.provisional {
				return g.token, nil
			}
			// The grant lasts until this waiter's liveness deadline:
			// make it last its TTL before relying on it. A failed
			// confirmation leaves the key to its next poll.
			if ok, err := d.Extend(ctx, key, owner, ttl); err == nil && ok {
				return g.token, nil
			}
		case <-slot.poke:
		case <-ready:
		case <-timer.C:
		case <-ctx.Done():
			d.leave(c)
			return 0, fmt.Errorf("redis: acquire: %w", ctx.Err())
		case <-d.closing:
			d.leave(c)
			return 0, ErrClosed
		}
	}
}

// startWait counts an AcquireWait call that Close must wait for, and
// reports false when Close has already begun waiting.
func (d *Driver) startWait() bool {
	d.leavesMu.Lock()
	defer d.leavesMu.Unlock()
	if d.waitsDone {
		return false
	}
	d.waits++
	return true
}

// endWait ends what startWait began, waking Close after the last one.
func (d *Driver) endWait() {
	d.leavesMu.Lock()
	defer d.leavesMu.Unlock()
	d.waits--
	if d.waits == 0 && d.waitsIdle != nil {
		close(d.waitsIdle)
		d.waitsIdle = nil
	}
}

// waitAttempt runs waitScript once and decodes its reply: the token when
// owner holds the key, else the holder's remaining TTL in ms and whether
// owner is first in the queue.
func (d *Driver) waitAttempt(ctx context.Context, c *scriptCall, channel any) (token uint64, pttl int64, first bool, err error) {
	cmd := append(c.withLock(), &c.owner, &c.ttl, d.holderArg, channel, d.livenessArg)
	reply, err := d.scripts.run(ctx, waitScript, c, cmd).Int64Slice()
	if err != nil {
		return 0, 0, false, err
	}
	if len(reply) != 3 || reply[0] < 0 {
		return 0, 0, false, fmt.Errorf("unexpected reply %v", reply)
	}
	return uint64(reply[0]), reply[1], reply[2] == 1, nil
}

// leave takes c's owner out of the queue, releasing the key if it was
// handed over meanwhile, in the background: the waiter returns at once,
// whatever the server does. The first attempt runs on a context of its own,
// bounded by leaveTimeout, which Close waits for (boundedly) before it
// closes the client; if the server cannot be reached, the leave is tried
// again until Close, so that a record left behind cannot be handed a key
// that nobody waits for.
func (d *Driver) leave(c *scriptCall) {
	c = c.usable()
	d.leavesMu.Lock()
	defer d.leavesMu.Unlock()
	if d.leavesDone {
		return // closed: the record goes by its liveness check
	}
	d.leaves.Add(1)
	d.firstLeaves.Add(1)
	go func() {
		defer d.leaves.Done()
		err := d.leaveOnce(context.Background(), c)
		d.firstLeaves.Done()
		if err == nil {
			return
		}
		pause := 10 * time.Millisecond
		for range leaveRetries {
			t := time.NewTimer(pause)
			select {
			case <-d.leavesCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			c = c.usable()
			if d.leaveOnce(d.leavesCtx, c) == nil {
				return
			}
			pause = min(2*pause, leaveTimeout)
		}
	}()
}

// leaveOnce runs leaveScript once, within leaveTimeout.
func (d *Driver) leaveOnce(parent context.Context, c *scriptCall) error {
	ctx, cancel := context.WithTimeout(parent, leaveTimeout)
	defer cancel()
	return d.scripts.run(ctx, leaveScript, c, append(c.withLock(), &c.owner, d.retentionArg)).Err()
}

// isClosed reports whether ch is closed (or has a value ready).
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
