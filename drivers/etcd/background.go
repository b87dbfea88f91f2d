package etcd

import (
	"context"
	"sync"
	"time"
)

// Clean-up that no caller should wait for runs in the background: revoking
// a lease that no key needs any more (the lease of a released lock, of a
// failed or abandoned acquisition), deleting the queue key of a waiter that
// gave up. Every task only speeds up what the server does by itself: a
// lease that is not revoked expires by its TTL, a queue key goes with its
// Driver's waiter lease. So tasks are bounded (in number, and each in time)
// and dropped rather than queued when too many are running; Close waits for
// the running ones, up to a bound.
const (
	// maxBackground bounds the tasks running at once.
	maxBackground = 64
	// backgroundTimeout bounds one task, its retries included.
	backgroundTimeout = 10 * time.Second
)

// background runs a Driver's clean-up tasks.
type background struct {
	ctx    context.Context // ends when Close stops waiting
	cancel context.CancelFunc

	mu      sync.Mutex
	running int
	done    bool // Close has begun waiting: start no more
	wg      sync.WaitGroup
}

func (b *background) init() {
	b.ctx, b.cancel = context.WithCancel(context.Background())
}

// later runs task in the background, unless maxBackground tasks are
// running or Close has begun waiting; task's ctx ends after
// backgroundTimeout or when Close stops waiting. It reports whether the
// task was started.
func (d *Driver) later(task func(ctx context.Context) error) bool {
	b := &d.bg
	b.mu.Lock()
	if b.done || b.running >= maxBackground {
		b.mu.Unlock()
		return false
	}
	b.running++
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer func() {
			b.mu.Lock()
			b.running--
			b.mu.Unlock()
			b.wg.Done()
		}()
		ctx, cancel := context.WithTimeout(b.ctx, backgroundTimeout)
		defer cancel()
		_ = task(ctx) // an error leaves the lease or key to its TTL
	}()
	return true
}

// revokeLater revokes lease id in the background.
func (d *Driver) revokeLater(id int64) {
	if id != 0 {
		d.later(func(ctx context.Context) error { return d.revoke(ctx, nil, id) })
	}
}

// stop stops taking tasks, waits up to bound for the running ones, then
// cancels those still running and waits for them to return.
func (b *background) stop(bound time.Duration) {
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
	idle := make(chan struct{})
	go func() {
		b.wg.Wait()
		close(idle)
	}()
	t := time.NewTimer(bound)
	select {
	case <-idle:
	case <-t.C:
	}
	t.Stop()
	b.cancel()
	<-idle
}
