package etcd

import (
	"context"
	"sync"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// waiterLease is the lease that holds a Driver's queue keys: one per Driver,
// granted when its first waiter queues, with the waiter TTL, and kept alive
// for as long as the Driver lives. A Driver whose process dies or freezes
// stops renewing it, and the server deletes every queue key on it a waiter
// TTL later, so that dead waiters do not keep the live ones waiting.
//
// A lease that is lost while the process lives (a partition, a freeze
// longer than the TTL) is replaced by the next waiter that queues; the
// waiters it held see lost close and queue again, at the back.
type waiterLease struct {
	granting chan struct{} // a one-slot lock, held while granting, that a waiter can give up on

	mu     sync.Mutex
	id     int64         // 0 when none
	lost   chan struct{} // closed when the lease is lost (or Close stops it)
	stop   context.CancelFunc
	done   chan struct{} // closed when the keep-alive drain has returned
	closed bool
}

func (w *waiterLease) init() { w.granting = make(chan struct{}, 1) }

// get returns the Driver's waiter lease, granting it if there is none, and
// a channel closed when the lease is lost.
func (w *waiterLease) get(ctx context.Context, d *Driver) (int64, <-chan struct{}, error) {
	if id, lost := w.current(); id != 0 {
		return id, lost, nil
	}
	select {
	case w.granting <- struct{}{}:
	case <-ctx.Done():
		return 0, nil, ctx.Err()
	case <-d.closing:
		return 0, nil, ErrClosed
	}
	defer func() { <-w.granting }()
	if id, lost := w.current(); id != 0 {
		return id, lost, nil // granted while this waiter waited for the lock
	}
	id, _, err := d.grant(ctx, d.waiterSecs)
	if err != nil {
		return 0, nil, err
	}
	kctx, stop := context.WithCancel(context.Background())
	renewals, err := d.lessor.KeepAlive(kctx, clientv3.LeaseID(id))
	if err != nil {
		stop()
		d.revokeLater(id)
		return 0, nil, err
	}
	lost, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for range renewals {
			// The lessor closes renewals when the lease is gone, when it
			// could not renew it within its TTL, or when kctx ends.
		}
		close(lost)
	}()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		stop()
		<-done
		d.revokeLater(id)
		return 0, nil, ErrClosed
	}
	if w.stop != nil {
		w.stop() // the lost lease's keep-alive, which has ended already
	}
	w.id, w.lost, w.stop, w.done = id, lost, stop, done
	w.mu.Unlock()
	return id, lost, nil
}

// current returns the lease and its lost channel while it is live.
func (w *waiterLease) current() (int64, <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.id == 0 || isClosed(w.lost) {
		return 0, nil
	}
	return w.id, w.lost
}

// close stops renewing the lease and revokes it, which deletes the queue
// keys still on it.
func (w *waiterLease) close(d *Driver) {
	w.mu.Lock()
	w.closed = true
	id, stop, done := w.id, w.stop, w.done
	w.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
	if id == 0 {
		return // abandoned already
	}
	ctx, cancel := context.WithTimeout(context.Background(), d.opTimeout)
	defer cancel()
	_ = d.revoke(ctx, nil, id)
}

// abandon stops renewing lease id if it is still the Driver's waiter lease,
// and revokes it in the background: the waiters on it see lost and queue
// again, and the server deletes its queue keys within a TTL even if the
// revocation does not get through. It is the way out when a queue key of a
// waiter that gave up cannot be deleted.
func (w *waiterLease) abandon(d *Driver, id int64) {
	w.mu.Lock()
	var stop context.CancelFunc
	if w.id == id && id != 0 {
		stop = w.stop
		w.id = 0
	}
	w.mu.Unlock()
	if stop != nil {
		stop()
		d.revokeLater(id)
	}
}
