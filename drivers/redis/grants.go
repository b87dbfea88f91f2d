package redis

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// grantListener delivers hand-off notices to a Driver's waiters. Each Driver
// listens on one channel of its own, on one pub/sub connection whatever the
// number of waiters; a script that hands a key to a waiter publishes
// "owner \n token \n lock key" there and nowhere else, so a hand-off wakes
// exactly the waiter it concerns. The connection opens when a waiter first
// has to queue and closes with the Driver; go-redis reconnects and
// subscribes again after a network failure.
//
// Notices published while the connection is down are lost. Each time the
// server confirms the subscription again, every waiter is poked to poll
// once, so a hand-off it missed is found at once rather than at its next
// poll.
type grantListener struct {
	client  goredis.UniversalClient // nil: no notices (no client, or a Ring)
	channel string
	arg     any // channel, boxed once

	mu      sync.Mutex
	waiting map[waitID]*waitSlot
	pubsub  *goredis.PubSub // nil until the first start
	stop    context.CancelFunc
	ready   chan struct{} // closed once the server has confirmed the subscription
	done    chan struct{} // closed when listen has returned
	closed  bool
}

// waitID names a waiter: the Redis lock key and the owner it waits as.
type waitID struct{ lock, owner string }

// waitSlot is where a waiter receives its notices.
type waitSlot struct {
	id      waitID
	granted chan uint64   // the token of the hand-off, at most one
	poke    chan struct{} // "poll now", at most one pending
}

func (g *grantListener) init(client goredis.UniversalClient, channel string) {
	g.client = client
	g.channel = channel
	g.arg = channel
	g.waiting = make(map[waitID]*waitSlot)
}

// register makes a slot for a waiter on lock as owner. The waiter registers
// before its first attempt, so a notice can never arrive before its slot.
func (g *grantListener) register(lock, owner string) *waitSlot {
	s := &waitSlot{
		id:      waitID{lock, owner},
		granted: make(chan uint64, 1),
		poke:    make(chan struct{}, 1),
	}
	g.mu.Lock()
	if g.waiting != nil {
		g.waiting[s.id] = s
	}
	g.mu.Unlock()
	return s
}

// unregister removes s; notices for it are dropped from then on.
func (g *grantListener) unregister(s *waitSlot) {
	g.mu.Lock()
	if g.waiting[s.id] == s {
		delete(g.waiting, s.id)
	}
	g.mu.Unlock()
}

// start opens the pub/sub connection if it is not open and returns a channel
// closed once the server has confirmed the subscription; nil when this
// Driver gets no notices (a Ring client, no client, or closed).
func (g *grantListener) start() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.client == nil {
		return nil
	}
	if g.pubsub == nil {
		ctx, stop := context.WithCancel(context.Background())
		// With no channels, Subscribe only builds the PubSub; listen
		// connects, so start never waits for the network.
		g.pubsub = g.client.Subscribe(ctx)
		g.stop = stop
		g.ready = make(chan struct{})
		g.done = make(chan struct{})
		go g.listen(ctx, g.pubsub, g.ready)
	}
	return g.ready
}

// listening reports whether the server has confirmed this Driver's
// subscription, so that a waiter can queue under its channel at once.
func (g *grantListener) listening() bool {
	g.mu.Lock()
	ready := g.ready
	g.mu.Unlock()
	return ready != nil && isClosed(ready)
}

// healthCheck is how long the listener waits for a message before it pings
// the server, so that a connection that died silently is noticed (a ping
// that cannot be written makes go-redis reconnect), as go-redis's own
// PubSub.Channel does.
const healthCheck = 30 * time.Second

// listen subscribes to the channel and delivers each message until the
// PubSub is closed. It reads the connection itself, rather than through
// PubSub.Channel, whose forwarding goroutine would add a hop to every
// hand-off.
func (g *grantListener) listen(ctx context.Context, ps *goredis.PubSub, ready chan struct{}) {
	defer close(g.done)
	// A failure here is not final: the PubSub records the channel and
	// subscribes again each time it reconnects.
	_ = ps.Subscribe(ctx, g.channel)
	confirmed := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, healthCheck)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, goredis.ErrClosed) {
				return
			}
			if isTimeout(err) {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				_ = ps.Ping(pctx)
				cancel()
				continue
			}
			// go-redis reconnects on the next receive; do not spin
			// while the server is away.
			pause := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
				pause.Stop()
				return
			case <-pause.C:
			}
			continue
		}
		switch msg := msg.(type) {
		case *goredis.Subscription:
			if msg.Kind != "subscribe" {
				continue
			}
			if !confirmed {
				confirmed = true
				close(ready)
				continue
			}
			g.pokeAll() // subscribed again after a reconnect
		case *goredis.Message:
			g.deliver(msg.Payload)
		}
	}
}

// isTimeout reports whether err is a read that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// deliver hands a grant notice to its waiter, without blocking. A notice for
// a waiter that has gone (it found the grant by polling, or gave up and left
// the queue, which releases a key handed to it) is dropped.
func (g *grantListener) deliver(payload string) {
	owner, rest, ok1 := strings.Cut(payload, "\n")
	tokenText, lock, ok2 := strings.Cut(rest, "\n")
	token, err := strconv.ParseUint(tokenText, 10, 64)
	if !ok1 || !ok2 || err != nil || token == 0 {
		return
	}
	g.mu.Lock()
	s := g.waiting[waitID{lock, owner}]
	g.mu.Unlock()
	if s == nil {
		return
	}
	select {
	case s.granted <- token:
	default:
	}
}

// pokeAll asks every waiter to poll now.
func (g *grantListener) pokeAll() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, s := range g.waiting {
		select {
		case s.poke <- struct{}{}:
		default:
		}
	}
}

// close stops the listener and waits for it.
func (g *grantListener) close() {
	g.mu.Lock()
	g.closed = true
	g.waiting = nil
	ps, stop, done := g.pubsub, g.stop, g.done
	g.mu.Unlock()
	if ps == nil {
		return
	}
	stop() // abandons a dial or SUBSCRIBE in progress
	_ = ps.Close()
	<-done
}
