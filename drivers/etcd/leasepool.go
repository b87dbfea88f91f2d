package etcd

import (
	"sync"
	"time"
)

// A lease costs two writes through the cluster's log: its grant and, when
// it is revoked or expires, its revocation. A Driver that takes and
// releases locks in a loop would pay both per acquisition, on top of the
// acquiring and releasing Txns. So a lease that one of the Driver's own
// locks held, and that its Release has just emptied, is kept for the next
// acquisition with the same TTL instead of being revoked: that acquisition
// renews it (a keep-alive, which the leader answers without writing to the
// log) in parallel with its acquiring Txn, and needs no grant.
//
// Each lease still serves one acquisition at a time. What makes reuse safe:
//
//   - only leases the Driver granted itself, and emptied itself (its own
//     owner-guarded delete returned the lease as the deleted key's), are
//     kept, so nothing else is attached to them;
//   - a kept lease is reused only while at least half of its TTL is left,
//     counted from the send time of its grant or last renewal (the server
//     counts from later than that, so it has at least as much left), so it
//     cannot expire in the round trip the reuse takes;
//   - an acquisition on a reused lease succeeds only if the renewal did,
//     so the server holds the lock at least the TTL from the acquire's send
//     time, as for a fresh grant.
//
// Leases that go stale in the pool are not renewed: they expire by
// themselves, and Close revokes the rest.
const (
	// maxIdleLeases bounds the leases kept, all TTLs together.
	maxIdleLeases = 64
	// maxHeldLeases bounds how many leases the Driver remembers as
	// holding its locks; beyond it, leases that must have expired are
	// forgotten.
	maxHeldLeases = 4096
)

// leaseInfo is what the Driver knows of one of its leases.
type leaseInfo struct {
	secs    int64     // the TTL asked for, the pool's key
	ttl     int64     // the TTL the server granted (it may raise it), seconds
	renewed time.Time // the send time of the grant or last renewal
}

// fresh reports whether the lease has at least half its TTL left at now.
func (l leaseInfo) fresh(now time.Time) bool {
	return now.Sub(l.renewed) < time.Duration(l.ttl)*time.Second/2
}

// leasePool is a Driver's record of its leases: those holding its locks,
// and the empty ones kept for reuse.
type leasePool struct {
	mu   sync.Mutex
	held map[int64]leaseInfo
	idle []idleLease // most recently emptied last
}

type idleLease struct {
	id int64
	leaseInfo
}

// take returns a fresh idle lease for secs, and the stale idle leases it
// found on the way, which the caller revokes.
func (p *leasePool) take(secs int64, now time.Time) (idleLease, bool, []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var stale []int64
	for i := len(p.idle) - 1; i >= 0; i-- {
		l := p.idle[i]
		switch {
		case !l.fresh(now):
			stale = append(stale, l.id)
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
		case l.secs == secs:
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return l, true, stale
		}
	}
	return idleLease{}, false, stale
}

// put keeps an empty lease for reuse, and reports false when it cannot
// (stale, or the pool is full): the caller revokes it.
func (p *leasePool) put(l idleLease, now time.Time) bool {
	if !l.fresh(now) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) >= maxIdleLeases {
		return false
	}
	p.idle = append(p.idle, l)
	return true
}

// hold records that lease id holds one of the Driver's locks.
func (p *leasePool) hold(id int64, info leaseInfo) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held = make(map[int64]leaseInfo)
	}
	if len(p.held) >= maxHeldLeases {
		now := time.Now()
		for hid, h := range p.held {
			if now.Sub(h.renewed) > time.Duration(h.ttl)*time.Second {
				delete(p.held, hid) // expired by now, unless renewed elsewhere
			}
		}
		if len(p.held) >= maxHeldLeases {
			return // not pooled when released: revoked instead
		}
	}
	p.held[id] = info
}

// renewed records a renewal of lease id sent at sent.
func (p *leasePool) renewed(id int64, ttl int64, sent time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if h, ok := p.held[id]; ok && sent.After(h.renewed) {
		h.renewed, h.ttl = sent, ttl
		p.held[id] = h
	}
}

// release forgets lease id as a holder of a lock, returning what was known
// of it.
func (p *leasePool) release(id int64) (leaseInfo, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, ok := p.held[id]
	delete(p.held, id)
	return h, ok
}

// drain empties the pool and returns the idle leases, for Close to revoke.
func (p *leasePool) drain() []int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids := make([]int64, len(p.idle))
	for i, l := range p.idle {
		ids[i] = l.id
	}
	p.idle = nil
	return ids
}
