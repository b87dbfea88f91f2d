package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"
)

const (
	// leaveTimeout bounds one try of a give-back: the leave of a wait that
	// ended without the key, or the release of an acquire cut short.
	leaveTimeout = 2 * time.Second
	// leaveRetries is how many more times a failed give-back is tried in
	// the background, leaveTimeout apart at most, before what it should
	// undo is left to expire (a queue entry's deadline, a lock's TTL).
	leaveRetries = 10
	// closeWaitBound bounds each of Close's two waits: for woken waiters
	// to return (one attempt may be in flight), and for the give-backs.
	closeWaitBound = 2 * leaveTimeout
	// expiryMargin is added to the holder's remaining TTL when the first
	// waiter schedules its poll, so that the key has expired by then.
	expiryMargin = time.Millisecond
)

// AcquireWait takes key for owner for ttl, waiting in a FIFO queue kept in
// the database as long as ctx allows. Each attempt is one statement: it
// takes the key when it is free and no live waiter is ahead, and queues
// owner otherwise. The key is handed over in the database when its holder
// releases it (or when anyone finds it free after its holder expired), and
// the new holder learns so from a notice on its Driver's channel, or from
// its next poll: every [WithWaitPoll] interval, and when the holder's TTL
// ends for the first in line.
//
// A waiter whose ctx ends, or whose Driver closes, returns at once and
// leaves the queue in the background; a key handed to it in the meantime is
// passed on to the next waiter. When ctx ends before the server has answered
// even the first attempt, the error says so and does not wrap ctx's: the
// server not answering is an outage, not a wait.
func (d *Driver) AcquireWait(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.readyFor(ctx, owner); err != nil {
		return 0, d.fail(ctx, "acquire", err)
	}
	if !d.startWait() {
		return 0, fmt.Errorf("postgres: acquire: %w", ErrClosed)
	}
	defer d.endWait()
	slot := d.notices.register(key, owner)
	defer d.notices.unregister(slot)

	// The first attempt that has to queue starts the Driver's listening
	// session; until it listens, waiters queue without a channel and
	// learn of hand-offs by polling. ready is closed once it listens.
	started := false
	var ready <-chan struct{}
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
			d.leave(key, owner)
			return 0, fmt.Errorf("postgres: acquire: %w", ErrClosed)
		}
		id := d.notices.identity()
		token, remaining, first, inFlight, err := d.waitAttempt(ctx, key, owner, ttl, id)
		if err != nil {
			// The statement may have run, or may still be running:
			// owner may be queued, or even hold the key. Leave once
			// it is over.
			d.leaveAfter(inFlight, key, owner)
			err = d.fail(ctx, "acquire", err)
			if !answered && errors.Is(err, context.DeadlineExceeded) && !isClosed(d.closing) {
				// The server never answered: an outage, not a wait
				// that ran out. A caller that cancelled gets its
				// ctx's error.
				return 0, fmt.Errorf("postgres: acquire: no answer from the server before the wait ended (%v)", err)
			}
			return 0, err
		}
		answered = true
		if token != 0 {
			return token, nil
		}
		if !started {
			started = true
			ready = d.notices.start()
		}
		if ready != nil && isClosed(ready) {
			ready = nil
			if id.pid == 0 {
				// Queue again under the session, so that a hand-off
				// notifies this waiter.
				continue
			}
		}
		wait := d.waitPoll
		if first && remaining > 0 {
			wait = min(wait, remaining+expiryMargin)
		}
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case token := <-slot.granted:
			return token, nil
		case <-slot.poke:
		case <-ready:
		case <-timer.C:
		case <-ctx.Done():
			d.leave(key, owner)
			return 0, fmt.Errorf("postgres: acquire: %w", ctx.Err())
		case <-d.closing:
			d.leave(key, owner)
			return 0, fmt.Errorf("postgres: acquire: %w", ErrClosed)
		}
	}
}

// startWait counts an AcquireWait call that Close must wait for, and
// reports false when Close has already begun waiting.
func (d *Driver) startWait() bool {
	d.cleanupMu.Lock()
	defer d.cleanupMu.Unlock()
	if d.waitsClosed {
		return false
	}
	d.waits++
	return true
}

// endWait ends what startWait began, waking Close after the last one.
func (d *Driver) endWait() {
	d.cleanupMu.Lock()
	defer d.cleanupMu.Unlock()
	d.waits--
	if d.waits == 0 && d.waitsIdle != nil {
		close(d.waitsIdle)
		d.waitsIdle = nil
	}
}

// waitAttempt runs the wait statement once: the token when owner holds the
// key, else the holder's remaining TTL and whether owner is first in line.
// On an error, inFlight is the backend that may still be running it (see
// Driver.change).
func (d *Driver) waitAttempt(ctx context.Context, key, owner string, ttl time.Duration, id identity) (token uint64, remaining time.Duration, first bool, inFlight uint32, err error) {
	var tok, remainingUS int64
	args := []any{key, owner, ttlMicros(ttl), d.pid, d.host, id.channel, id.pid, id.start, d.liveness}
	if inFlight, err := d.change(ctx, d.sql.wait, args, &tok, &remainingUS, &first); err != nil {
		return 0, 0, false, inFlight, err
	}
	if tok < 0 || remainingUS < 0 {
		return 0, 0, false, 0, fmt.Errorf("unexpected reply (%d, %d)", tok, remainingUS)
	}
	return uint64(tok), time.Duration(remainingUS) * time.Microsecond, first, 0, nil
}

// leave takes owner out of key's queue in the background, passing the key
// on if it was handed over meanwhile, so that the waiter's caller does not
// wait for it: its ctx has usually ended, and the server may be the reason.
func (d *Driver) leave(key, owner string) { d.leaveAfter(0, key, owner) }

// leaveAfter is leave once the backend inFlight (0: none) has finished the
// wait statement abandoned on it.
func (d *Driver) leaveAfter(inFlight uint32, key, owner string) {
	d.giveBack(inFlight, func(context.Context) error { return d.leaveOnce(key, owner) })
}

// giveBack runs undo in the background, after the backend inFlight (0:
// none) has finished the statement abandoned on it, so that undo sees what
// that statement did. undo runs on a context of its own, bounded by
// leaveTimeout, and is tried again with backoff until it succeeds,
// leaveRetries tries have failed or Close gives up on it. If it never
// succeeds, what it should have undone ends by itself: a queue entry's
// liveness deadline passes within 4 polls, and a key taken or handed over
// is held until its TTL.
func (d *Driver) giveBack(inFlight uint32, undo func(ctx context.Context) error) {
	d.cleanupMu.Lock()
	defer d.cleanupMu.Unlock()
	if d.leavesClosed {
		return // Close is past waiting for these
	}
	d.leaves.Add(1)
	go func() {
		defer d.leaves.Done()
		if inFlight != 0 {
			d.settle(inFlight)
		}
		pause := 10 * time.Millisecond
		for try := 0; ; try++ {
			ctx, cancel := context.WithTimeout(d.leavesCtx, leaveTimeout)
			err := undo(ctx)
			cancel()
			if err == nil || try == leaveRetries {
				return
			}
			t := time.NewTimer(pause)
			select {
			case <-d.leavesCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			pause = min(2*pause, leaveTimeout)
		}
	}()
}

// settleBound bounds how long giveBack waits for an abandoned statement to
// finish: one that waits for a row lock may take as long as the
// transaction holding it.
const settleBound = 10 * time.Second

// settle waits until the backend pid has exited: the statement a call cut
// short sent it has then committed or rolled back. Driver.change closed
// that connection, so the backend runs whatever it had received and exits
// when it reads the end of the stream. Idle is not enough: the statement
// may still be unread in the backend's socket. It gives up after
// settleBound, or when the server cannot be asked.
func (d *Driver) settle(pid uint32) {
	ctx, cancel := context.WithTimeout(d.leavesCtx, settleBound)
	defer cancel()
	pause := time.Millisecond
	for {
		var running bool
		err := d.queryRow(ctx, `SELECT EXISTS (SELECT FROM pg_stat_get_activity($1))`, []any{int32(pid)}, &running)
		if err != nil || !running {
			return
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// leaveOnce runs the leave statement once.
func (d *Driver) leaveOnce(key, owner string) error {
	ctx, cancel := context.WithTimeout(d.leavesCtx, leaveTimeout)
	defer cancel()
	var passed bool
	return d.queryRow(ctx, d.sql.leave, []any{key, owner}, &passed)
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
