package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// noticeChannelPrefix starts the name of every Driver's notice channel; 64
// random bits in hex follow, so each Driver listens on a channel of its own.
const noticeChannelPrefix = "zerotal_lock_"

const (
	// healthCheck is how long the listener waits for a notification before
	// it pings the server, so that a session that died silently (a frozen
	// server, a dropped network) is noticed and replaced.
	healthCheck = 30 * time.Second
	// pingTimeout bounds that ping and each step of connecting.
	pingTimeout = 5 * time.Second
	// The listener reconnects after a failure with a delay that doubles
	// from minBackoff to maxBackoff.
	minBackoff = 50 * time.Millisecond
	maxBackoff = 2 * time.Second
)

// randomID returns 64 random bits in hex.
func randomID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// listener delivers hand-off notices to a Driver's waiters. Each Driver
// LISTENs on one channel of its own, on one dedicated connection whatever
// the number of waiters; the statement that hands a key to a waiter runs
// pg_notify on the waiter's Driver's channel with "token owner key", which
// the server delivers when that statement commits, so a hand-off wakes
// exactly the waiter it concerns. The connection opens when a waiter first
// has to queue and closes with the Driver.
//
// When the session is lost, notices sent meanwhile are lost with it. The
// listener reconnects with backoff and LISTENs again, and each time the
// session changes (lost or back) it pokes every waiter to poll at once: the
// poll finds a hand-off it missed, and records the new session in its
// queue entry, so that hand-offs neither take it for dead (its old session
// is gone) nor notify a channel nobody listens on.
type listener struct {
	config  *pgx.ConnConfig // nil: no notices (no pool)
	channel string

	mu       sync.Mutex
	waiting  map[waitID]*waitSlot
	session  session // the listening backend; zero while disconnected
	listened bool    // a session has listened: later changes poke the waiters
	stop     context.CancelFunc
	ready    chan struct{} // closed once the first LISTEN succeeded; nil until started
	done     chan struct{} // closed when run has returned
	closed   bool
}

// session identifies the backend that listens: its pid and start time, as
// pg_stat_activity shows them. A hand-off takes a waiter whose session is
// gone for dead.
type session struct {
	pid   int32
	start time.Time
}

// identity is what a waiter records in its queue entry: the channel to
// notify and the session that listens on it; empty while no session
// listens, in which case the waiter learns of a hand-off by polling.
type identity struct {
	channel string
	pid     int32
	start   any // time.Time, or nil for NULL
}

// waitID names a waiter: the key and the owner it waits as.
type waitID struct{ key, owner string }

// waitSlot is where a waiter receives its notices.
type waitSlot struct {
	id      waitID
	granted chan uint64   // the token of the hand-off, at most one
	poke    chan struct{} // "poll now", at most one pending
}

func (l *listener) init(config *pgx.ConnConfig, channel string) {
	l.config = config
	l.channel = channel
	l.waiting = make(map[waitID]*waitSlot)
}

// register makes a slot for a waiter on key as owner. The waiter registers
// before its first attempt, so that a notice cannot arrive before its slot.
func (l *listener) register(key, owner string) *waitSlot {
	s := &waitSlot{
		id:      waitID{key, owner},
		granted: make(chan uint64, 1),
		poke:    make(chan struct{}, 1),
	}
	l.mu.Lock()
	if l.waiting != nil {
		l.waiting[s.id] = s
	}
	l.mu.Unlock()
	return s
}

// unregister removes s; notices for it are dropped from then on.
func (l *listener) unregister(s *waitSlot) {
	l.mu.Lock()
	if l.waiting[s.id] == s {
		delete(l.waiting, s.id)
	}
	l.mu.Unlock()
}

// identity returns what a waiter should record now.
func (l *listener) identity() identity {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.session.pid == 0 {
		return identity{}
	}
	id := identity{channel: l.channel, pid: l.session.pid}
	if !l.session.start.IsZero() {
		id.start = l.session.start
	}
	return id
}

// start opens the listening session if it is not open and returns a
// channel closed once it first listens; nil when the Driver gets no
// notices (closed, or no pool).
func (l *listener) start() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed || l.config == nil {
		return nil
	}
	if l.ready == nil {
		ctx, stop := context.WithCancel(context.Background())
		l.stop = stop
		l.ready = make(chan struct{})
		l.done = make(chan struct{})
		go l.run(ctx, l.ready)
	}
	return l.ready
}

// run keeps a session listening until ctx ends.
func (l *listener) run(ctx context.Context, ready chan struct{}) {
	defer close(l.done)
	backoff := minBackoff
	first := true
	for ctx.Err() == nil {
		conn, s, err := l.connect(ctx)
		if err != nil {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		l.setSession(s)
		if first {
			first = false
			close(ready)
		}
		l.receive(ctx, conn)
		l.setSession(session{})
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = conn.Close(cctx)
		cancel()
	}
}

// connect opens a session, LISTENs on the channel and reads the session's
// identity.
func (l *listener) connect(ctx context.Context) (*pgx.Conn, session, error) {
	cctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, l.config.Copy())
	if err != nil {
		return nil, session{}, err
	}
	var s session
	if _, err = conn.Exec(cctx, "LISTEN "+quoteIdent(l.channel)); err == nil {
		err = conn.QueryRow(cctx, `SELECT pid, coalesce(backend_start, 'epoch') FROM pg_stat_get_activity(pg_backend_pid())`).Scan(&s.pid, &s.start)
	}
	if err != nil {
		_ = conn.Close(context.Background())
		return nil, session{}, err
	}
	if s.start.Unix() == 0 {
		s.start = time.Time{}
	}
	return conn, s, nil
}

// receive delivers notifications until the session fails or ctx ends.
func (l *listener) receive(ctx context.Context, conn *pgx.Conn) {
	for {
		wctx, cancel := context.WithTimeout(ctx, healthCheck)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			l.deliver(n.Payload)
			continue
		case ctx.Err() != nil, conn.IsClosed():
			return
		case errors.Is(err, context.DeadlineExceeded):
			// Quiet for healthCheck: make sure the session is alive.
			pctx, cancel := context.WithTimeout(ctx, pingTimeout)
			err = conn.Ping(pctx)
			cancel()
			if err == nil {
				continue
			}
		}
		return
	}
}

// setSession records the listening session and, when it changes after the
// first, pokes every waiter to poll. The first needs no poke: the waiters
// learn of it from ready and queue again under it, and a poke besides would
// make each try once more for nothing.
func (l *listener) setSession(s session) {
	l.mu.Lock()
	defer l.mu.Unlock()
	changed := l.session != s && l.listened
	l.session = s
	l.listened = l.listened || s.pid != 0
	if changed {
		for _, w := range l.waiting {
			select {
			case w.poke <- struct{}{}:
			default:
			}
		}
	}
}

// deliver hands a grant notice to its waiter without blocking. A notice for
// a waiter that has gone (it found the grant by polling, or gave up and
// left the queue, which passes on a key handed to it) is dropped.
func (l *listener) deliver(payload string) {
	tokenText, rest, ok1 := strings.Cut(payload, " ")
	owner, key, ok2 := strings.Cut(rest, " ")
	token, err := strconv.ParseUint(tokenText, 10, 64)
	if !ok1 || !ok2 || err != nil || token == 0 {
		return
	}
	l.mu.Lock()
	s := l.waiting[waitID{key, owner}]
	l.mu.Unlock()
	if s == nil {
		return
	}
	select {
	case s.granted <- token:
	default:
	}
}

// close stops the listener and waits for it.
func (l *listener) close() {
	l.mu.Lock()
	l.closed = true
	l.waiting = nil
	stop, done := l.stop, l.done
	l.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}
