package redis

import (
	"context"
	"slices"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// notifier fans release notices out to local subscribers. A Driver has one
// pub/sub connection on one channel, whatever the number of waiters: the
// message is the released lock's Redis key, and notifier hands it to the
// subscribers of that key. The connection opens with the first Subscribe and closes with the
// Driver; go-redis reconnects and resubscribes it after a network failure.
//
// Notices published while the connection is down or being set up are lost,
// which the contract allows: the engine polls as well.
type notifier struct {
	client  goredis.UniversalClient
	channel string

	mu      sync.Mutex
	waiters map[string][]chan struct{} // by Redis lock key
	pubsub  *goredis.PubSub            // nil until the first subscribe
	stop    context.CancelFunc
	done    chan struct{} // closed when listen has returned
	closed  bool
}

func (n *notifier) init(client goredis.UniversalClient, channel string) {
	n.client = client
	n.channel = channel
	n.waiters = make(map[string][]chan struct{})
}

// subscribe registers a waiter for key and starts the listener if it is not
// running. It never blocks on the network: the listener subscribes in the
// background.
func (n *notifier) subscribe(key string) (<-chan struct{}, func()) {
	key, _ = redisKeys(key)
	ch := make(chan struct{}, 1)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed || n.client == nil {
		// Nothing will be sent: the engine's poll finds the driver closed.
		return ch, func() {}
	}
	n.waiters[key] = append(n.waiters[key], ch)
	if n.pubsub == nil {
		n.start()
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
	n.done = make(chan struct{})
	go n.listen(ctx, n.pubsub)
}

// listen subscribes to the channel and delivers each message until the
// PubSub is closed.
func (n *notifier) listen(ctx context.Context, ps *goredis.PubSub) {
	defer close(n.done)
	// A failure here is not final: the PubSub records the channel and
	// subscribes again each time Channel's receiver reconnects.
	_ = ps.Subscribe(ctx, n.channel)
	for msg := range ps.Channel() {
		n.notify(msg.Payload)
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
