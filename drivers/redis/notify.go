package redis

import (
	"context"
	"slices"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// subscribeWait bounds how long the first subscribe waits for the shared
// subscription to be confirmed. Subscribe has no context, so this is what a
// caller can lose to a server that accepts connections and never answers; a
// refused connection ends the wait at once.
const subscribeWait = time.Second

// notifier fans release notices out to local subscribers. A Driver has one
// pub/sub connection on one channel, whatever the number of waiters: the
// message is the released lock's Redis key, and notifier hands it to the
// subscribers of that key. The connection opens with the first subscribe and
// closes with the Driver; go-redis reconnects and subscribes again after a
// network failure.
//
// The first subscribe waits, at most subscribeWait, for the server to confirm
// the subscription, so that the engine's pattern (subscribe, try, wait) does
// not miss a release that follows at once; later ones register locally and
// return. Notices published while the connection is down are lost, which the
// contract allows: the engine polls as well.
type notifier struct {
	client  goredis.UniversalClient
	channel string

	mu      sync.Mutex
	waiters map[string][]chan struct{} // by Redis lock key
	pubsub  *goredis.PubSub            // nil until the first subscribe
	stop    context.CancelFunc
	settled chan struct{} // closed once the subscription is confirmed or failed to start
	done    chan struct{} // closed when listen has returned
	closed  bool
}

func (n *notifier) init(client goredis.UniversalClient, channel string) {
	n.client = client
	n.channel = channel
	n.waiters = make(map[string][]chan struct{})
}

// subscribe registers a waiter for key, starts the listener if it is not
// running, and waits until the subscription is confirmed (see subscribeWait).
func (n *notifier) subscribe(key string) (<-chan struct{}, func()) {
	key, _ = redisKeys(key)
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	if n.closed || n.client == nil {
		n.mu.Unlock()
		// Nothing will be sent: the engine's poll finds the driver closed.
		return ch, func() {}
	}
	n.waiters[key] = append(n.waiters[key], ch)
	if n.pubsub == nil {
		n.start()
	}
	settled := n.settled
	n.mu.Unlock()

	select {
	case <-settled:
	default:
		timer := time.NewTimer(subscribeWait)
		select {
		case <-settled:
		case <-timer.C:
		}
		timer.Stop()
	}
	var once sync.Once
	return ch, func() { once.Do(func() { n.unsubscribe(key, ch) }) }
}

// unsubscribe removes the waiter ch of key.
func (n *notifier) unsubscribe(key string, ch chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	list := n.waiters[key]
	i := slices.Index(list, ch)
	if i < 0 {
		return
	}
	if len(list) == 1 {
		delete(n.waiters, key)
		return
	}
	list[i] = list[len(list)-1]
	list[len(list)-1] = nil
	n.waiters[key] = list[:len(list)-1]
}

// start opens the pub/sub connection and the listener; n.mu is held.
func (n *notifier) start() {
	ctx, stop := context.WithCancel(context.Background())
	// With no channels, Subscribe only builds the PubSub; listen connects.
	n.pubsub = n.client.Subscribe(ctx)
	n.stop = stop
	n.settled = make(chan struct{})
	n.done = make(chan struct{})
	go n.listen(ctx, n.pubsub, n.settled)
}

// listen subscribes to the channel and delivers each message until the
// PubSub is closed. It closes settled when the server confirms the
// subscription or the first attempt fails.
func (n *notifier) listen(ctx context.Context, ps *goredis.PubSub, settled chan struct{}) {
	defer close(n.done)
	var once sync.Once
	settle := func() { once.Do(func() { close(settled) }) }
	defer settle()
	// A failure here is not final: the PubSub records the channel and
	// subscribes again each time its receiver reconnects.
	if err := ps.Subscribe(ctx, n.channel); err != nil {
		settle()
	}
	for msg := range ps.ChannelWithSubscriptions() {
		switch msg := msg.(type) {
		case *goredis.Subscription:
			settle()
		case *goredis.Message:
			n.notify(msg.Payload)
		}
	}
}

// notify wakes the waiters of the lock key without blocking: a waiter whose buffer is
// full already has a notice pending.
func (n *notifier) notify(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, ch := range n.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// close stops the listener and waits for it; later subscriptions get a
// channel that never fires.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	ps, stop, done := n.pubsub, n.stop, n.done
	n.waiters = nil
	n.mu.Unlock()
	if ps == nil {
		return
	}
	stop() // abandons a dial or SUBSCRIBE in progress
	_ = ps.Close()
	<-done
}
