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

// grantListener delivers hand-off notices to a Driver's waiters. A script
// that hands a key to a waiter publishes "owner \n token \n lock key",
// followed by "\n p" for a provisional grant, on the waiter's channel and
// nowhere else, so a hand-off wakes exactly the waiter it concerns. How
// channels are laid out depends on the deployment:
//
//   - one server (a Client, standalone or behind Sentinel): one channel per
//     Driver, on one pub/sub connection whatever the number of waiters; the
//     server counts its subscribers, so a waiter whose Driver died is
//     skipped at once (kind 'p', see lua/constants.lua);
//   - a Redis Cluster: one shard channel per Driver and lock, named after
//     the lock key so that it lives in the lock's hash slot (SSUBSCRIBE,
//     SPUBLISH, Redis 7): the notice never leaves the lock's node, and that
//     node counts the subscribers (kind 's'). The Driver keeps one pub/sub
//     connection per node, holding the channels of the locks it waits for
//     there. Where the cluster has no sharded pub/sub, one channel per
//     Driver that the cluster bus relays to every node (kind 'g');
//   - a Ring: no notices (a script publishes on the key's shard, but the
//     subscription would be on the channel's); waiters poll.
//
// Connections open when a waiter first has to queue and close with the
// Driver; go-redis reconnects and subscribes again after a network failure.
// Notices published while a connection is down are lost: each time the
// server confirms a subscription again, every waiter is poked to poll once,
// so a hand-off it missed is found at once rather than at its next poll.
type grantListener struct {
	client  goredis.UniversalClient // nil: no notices (no client, or a Ring)
	cluster *goredis.ClusterClient  // set for a cluster, whose channels are sharded unless noShards
	channel string                  // the Driver's channel, or the prefix of its per-lock shard channels
	kind    string                  // the kind of the Driver's one channel, when not the client's (tests)

	mu       sync.Mutex
	waiting  map[waitID]*waitSlot
	single   *feed            // the one connection: a Client, or a cluster without sharded pub/sub
	nodes    map[string]*feed // a cluster's connections, by node address
	retired  []*feed          // nodes' connections forgotten while waiters still held channels on them
	noShards bool             // the cluster refused SSUBSCRIBE: use single
	closed   bool
	closing  sync.WaitGroup // feeds closing in the background, which close waits for
}

// waitID names a waiter: the Redis lock key and the owner it waits as.
type waitID struct{ lock, owner string }

// waitSlot is where a waiter receives its notices.
type waitSlot struct {
	id      waitID
	granted chan grant    // the hand-off, at most one
	poke    chan struct{} // "poll now", at most one pending
}

// grant is a hand-off notice: the token, and whether the grant lasts only
// until the waiter's liveness deadline, so that the waiter must extend it to
// its TTL before it may rely on it (see handoff in lua/lib.lua).
type grant struct {
	token       uint64
	provisional bool
}

// The kinds of notice channel, the first byte of a waiter's channel
// argument (lua/constants.lua).
const (
	kindPublish = "p" // PUBLISH; the server counts subscribers
	kindSharded = "s" // SPUBLISH in the lock's slot; its node counts subscribers
	kindGlobal  = "g" // PUBLISH relayed by the cluster bus; nobody counts
)

func (g *grantListener) init(client goredis.UniversalClient, channel string) {
	g.client = client
	g.cluster, _ = client.(*goredis.ClusterClient)
	g.channel = channel
	g.waiting = make(map[waitID]*waitSlot)
	g.nodes = make(map[string]*feed)
}

// register makes a slot for a waiter on lock as owner. The waiter registers
// before its first attempt, so a notice can never arrive before its slot.
func (g *grantListener) register(lock, owner string) *waitSlot {
	s := &waitSlot{
		id:      waitID{lock, owner},
		granted: make(chan grant, 1),
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

// subscription is a waiter's hold on the channel it hears its hand-off on.
type subscription struct {
	arg   any             // the channel argument of the wait script: kind and name, boxed
	ready <-chan struct{} // closed once the server has confirmed the subscription
	f     *feed
	name  string
}

// subscribe returns the subscription a waiter on lock hears its hand-off
// on, subscribing if needed, or nil when this Driver gets no notices (a
// Ring, no client, closed). A waiter ends it with unsubscribe.
func (g *grantListener) subscribe(ctx context.Context, lock string) *subscription {
	name := g.channel + ":" + lock // a shard channel's hash tag is the lock's: the same slot
	var node *goredis.Client
	if g.cluster != nil && !g.sharesNothing() {
		var err error
		if node, err = g.cluster.MasterForKey(ctx, name); err != nil {
			return nil // the slot map is unknown: poll until it is known again
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.client == nil {
		return nil
	}
	if g.cluster == nil || g.noShards {
		if g.single == nil {
			// A Client (standalone or behind Sentinel) runs scripts
			// and pub/sub on one server, which can count a Driver's
			// subscription; elsewhere no node can.
			kind := kindGlobal
			if _, one := g.client.(*goredis.Client); one {
				kind = kindPublish
			}
			if g.kind != "" {
				kind = g.kind
			}
			g.single = g.newFeed(g.client, kind, false)
		}
		return g.single.add(g.channel)
	}
	addr := node.Options().Addr
	f := g.nodes[addr]
	if f == nil {
		f = g.newFeed(node, kindSharded, true)
		g.nodes[addr] = f
	}
	return f.add(name)
}

// current returns a subscription on the channel a waiter on lock would
// use, when the server has confirmed it already (the Driver's one channel,
// or a shard channel another waiter on lock opened), and nil otherwise, so
// that a wait can queue under it from its first attempt.
func (g *grantListener) current(lock string) *subscription {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	if g.single != nil && (g.cluster == nil || g.noShards) {
		if ch := g.single.chans[g.channel]; ch != nil && ch.confirmed {
			return g.single.add(g.channel)
		}
		return nil
	}
	name := g.channel + ":" + lock
	for _, f := range g.nodes {
		if ch := f.chans[name]; ch != nil && ch.confirmed {
			return f.add(name)
		}
	}
	return nil
}

// sharesNothing reports whether the cluster's waiters share the Driver's
// one channel (no sharded pub/sub), so that no node need be resolved.
func (g *grantListener) sharesNothing() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.noShards
}

// unsubscribe ends s. A shard channel nobody waits on any more is
// unsubscribed; the Driver's own channel stays until Close.
func (g *grantListener) unsubscribe(s *subscription) {
	if s == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s.f.drop(s.name)
}

// shardsRefused is called by a feed whose node refused SSUBSCRIBE (a
// cluster before Redis 7): the Driver falls back to one channel relayed by
// the cluster bus.
func (g *grantListener) shardsRefused(f *feed) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.noShards {
		g.noShards = true
		g.pokeAllLocked()
	}
	g.forget(f)
}

// forget removes a node's feed that failed, so that the next waiter
// resolves its slot's node again (after a failover, the new primary).
// Waiters still subscribed through it go on polling; it closes when the
// last of them is done. The caller holds mu.
func (g *grantListener) forget(f *feed) {
	for addr, nf := range g.nodes {
		if nf == f {
			delete(g.nodes, addr)
			f.retired = true
			if len(f.chans) == 0 {
				g.closeLater(f)
			} else {
				g.retired = append(g.retired, f)
			}
		}
	}
}

// closeLater closes f in the background: the caller holds mu, which f's
// goroutines take. After close it does nothing: close has closed every feed
// that still had channels, and a waiter's late unsubscribe must neither add
// to closing while close waits for it nor start a goroutine that outlives
// close.
func (g *grantListener) closeLater(f *feed) {
	if g.closed {
		return
	}
	g.closing.Add(1)
	go func() {
		defer g.closing.Done()
		f.close()
	}()
}

// deliver hands a grant notice to its waiter, without blocking. A notice for
// a waiter that has gone (it found the grant by polling, or gave up and left
// the queue, which releases a key handed to it) is dropped.
func (g *grantListener) deliver(payload string) {
	owner, rest, ok1 := strings.Cut(payload, "\n")
	tokenText, rest, ok2 := strings.Cut(rest, "\n")
	token, err := strconv.ParseUint(tokenText, 10, 64)
	if !ok1 || !ok2 || err != nil || token == 0 {
		return
	}
	// A lock key always ends in '}', so a final "\np" can only be the flag.
	lock, provisional := strings.CutSuffix(rest, "\np")
	g.mu.Lock()
	s := g.waiting[waitID{lock, owner}]
	g.mu.Unlock()
	if s == nil {
		return
	}
	select {
	case s.granted <- grant{token, provisional}:
	default:
	}
}

// pokeAllLocked asks every waiter to poll now. The caller holds mu.
func (g *grantListener) pokeAllLocked() {
	for _, s := range g.waiting {
		select {
		case s.poke <- struct{}{}:
		default:
		}
	}
}

// close stops every feed and waits for them.
func (g *grantListener) close() {
	g.mu.Lock()
	g.closed = true
	g.waiting = nil
	feeds := append([]*feed(nil), g.retired...)
	if g.single != nil {
		feeds = append(feeds, g.single)
	}
	for _, f := range g.nodes {
		feeds = append(feeds, f)
	}
	g.nodes, g.retired = nil, nil
	g.mu.Unlock()
	for _, f := range feeds {
		f.close()
	}
	g.closing.Wait()
}

// feed is one pub/sub connection, the goroutine that reads it and the one
// that sends its (un)subscriptions, in order. Its fields other than the
// PubSub are guarded by the listener's mu.
type feed struct {
	g       *grantListener
	ps      *goredis.PubSub
	kind    string
	sharded bool
	retired bool // forgotten by the listener: closes once its channels are dropped
	stop    context.CancelFunc
	done    sync.WaitGroup // the reader and the sender
	chans   map[string]*feedChannel
	queue   []feedOp       // (un)subscriptions to send
	wake    chan struct{}  // the sender's signal: queue is not empty
	leaving map[string]int // SUNSUBSCRIBEs sent and not yet confirmed, by channel
	closeMu sync.Once
}

// feedOp is a subscription or unsubscription to send.
type feedOp struct {
	name      string
	subscribe bool
}

// feedChannel is one channel of a feed: how many waiters hold it, and the
// server's confirmation.
type feedChannel struct {
	refs      int
	ready     chan struct{}
	arg       any
	confirmed bool
}

// newFeed starts a feed on c. With no channels, Subscribe only builds the
// PubSub: the first subscription connects, so newFeed never waits for the
// network.
func (g *grantListener) newFeed(c goredis.UniversalClient, kind string, sharded bool) *feed {
	ctx, stop := context.WithCancel(context.Background())
	f := &feed{
		g: g, kind: kind, sharded: sharded, stop: stop,
		chans: make(map[string]*feedChannel), wake: make(chan struct{}, 1), leaving: make(map[string]int),
	}
	if sharded {
		f.ps = c.SSubscribe(ctx)
	} else {
		f.ps = c.Subscribe(ctx)
	}
	f.done.Add(2)
	go f.listen(ctx)
	go f.sender(ctx)
	return f
}

// add holds channel name for one more waiter, subscribing when it is new.
// The caller holds the listener's mu.
func (f *feed) add(name string) *subscription {
	ch := f.chans[name]
	if ch == nil {
		ch = &feedChannel{ready: make(chan struct{}), arg: f.kind + name}
		f.chans[name] = ch
		f.enqueue(feedOp{name, true})
	}
	ch.refs++
	return &subscription{arg: ch.arg, ready: ch.ready, f: f, name: name}
}

// drop releases one waiter's hold on name; a shard channel nobody holds is
// unsubscribed, and a retired feed with no channel left closes. The caller
// holds the listener's mu.
func (f *feed) drop(name string) {
	ch := f.chans[name]
	if ch == nil {
		return
	}
	if ch.refs--; ch.refs > 0 || !f.sharded {
		return
	}
	delete(f.chans, name)
	if f.retired {
		if len(f.chans) == 0 {
			f.g.closeLater(f)
		}
		return
	}
	f.leaving[name]++
	f.enqueue(feedOp{name, false})
}

// enqueue hands op to the sender. The caller holds the listener's mu.
func (f *feed) enqueue(op feedOp) {
	f.queue = append(f.queue, op)
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// sender sends the queued (un)subscriptions in order, until the feed
// closes. A failure is not final: the PubSub records its channels and
// subscribes again each time it reconnects. A node that refuses shard
// channels makes the Driver fall back to one channel for the cluster.
func (f *feed) sender(ctx context.Context) {
	defer f.done.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.wake:
		}
		for {
			f.g.mu.Lock()
			if len(f.queue) == 0 {
				f.g.mu.Unlock()
				break
			}
			op := f.queue[0]
			f.queue = f.queue[1:]
			f.g.mu.Unlock()
			sctx, cancel := context.WithTimeout(ctx, leaveTimeout)
			var err error
			switch {
			case op.subscribe && f.sharded:
				err = f.ps.SSubscribe(sctx, op.name)
			case op.subscribe:
				err = f.ps.Subscribe(sctx, op.name)
			default:
				err = f.ps.SUnsubscribe(sctx, op.name)
			}
			cancel()
			if f.sharded && goredis.HasErrorPrefix(err, "unknown command") {
				f.g.shardsRefused(f)
			}
		}
	}
}

// healthCheck is how long a feed waits for a message before it pings the
// server, so that a connection that died silently is noticed (a ping that
// cannot be written makes go-redis reconnect), as go-redis's own
// PubSub.Channel does.
const healthCheck = 30 * time.Second

// feedFailures is how many receive errors in a row make a node's feed be
// forgotten, so that new waiters resolve the node of their slot again.
const feedFailures = 3

// listen delivers each message until the feed is closed. It reads the
// connection itself, rather than through PubSub.Channel, whose forwarding
// goroutine would add a hop to every hand-off.
func (f *feed) listen(ctx context.Context) {
	defer f.done.Done()
	failures := 0
	for {
		msg, err := f.ps.ReceiveTimeout(ctx, healthCheck)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, goredis.ErrClosed) {
				return
			}
			if isTimeout(err) {
				pctx, cancel := context.WithTimeout(ctx, time.Second)
				_ = f.ps.Ping(pctx)
				cancel()
				continue
			}
			if failures++; failures == feedFailures && f.sharded {
				f.g.mu.Lock()
				f.g.forget(f)
				f.g.mu.Unlock()
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
		failures = 0
		switch msg := msg.(type) {
		case *goredis.Subscription:
			f.confirm(msg)
		case *goredis.Message:
			f.g.deliver(msg.Payload)
		}
	}
}

// confirm records the server's answer to a (re)subscription: the first
// confirmation of a channel lets its waiters queue under it; a later one
// follows a reconnect, after which every waiter polls once. A node that
// unsubscribes a shard channel on its own has lost the slot (a failover or
// a resharding): the feed is forgotten, and its waiters poll.
func (f *feed) confirm(msg *goredis.Subscription) {
	g := f.g
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := f.chans[msg.Channel]
	switch msg.Kind {
	case "subscribe", "ssubscribe":
		if ch == nil {
			return
		}
		if !ch.confirmed {
			ch.confirmed = true
			close(ch.ready)
			return
		}
		g.pokeAllLocked()
	case "sunsubscribe":
		if f.leaving[msg.Channel] > 0 {
			if f.leaving[msg.Channel]--; f.leaving[msg.Channel] == 0 {
				delete(f.leaving, msg.Channel)
			}
			return
		}
		if ch != nil {
			g.forget(f)
			g.pokeAllLocked()
		}
	}
}

// close stops the feed and waits for its goroutines; closing twice is
// harmless.
func (f *feed) close() {
	f.closeMu.Do(func() {
		f.stop() // abandons a dial or SUBSCRIBE in progress
		_ = f.ps.Close()
		f.done.Wait()
	})
}

// isTimeout reports whether err is a read that timed out.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
