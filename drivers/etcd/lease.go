package etcd

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Every acquisition has a lease of its own, granted with the acquisition's
// TTL; the lock key is attached to it, so the server deletes the key when
// the lease expires, and revoking the lease deletes exactly that
// acquisition's key.
//
// Leases are granted with ids the driver draws itself (63 random bits), not
// ids the server picks. That makes a grant safe to repeat: a retry after a
// grant whose answer was lost gets "lease already exists" for its own
// lease, and a lease whose grant may or may not have happened can still be
// revoked, by its id, so that it never outlives its purpose by more than
// the call that revokes it.

// ttlSeconds is ttl in whole seconds, the unit of etcd leases, rounded up
// so that the server never keeps a lock for less than the caller asked.
// The server raises it further to its minimum lease TTL, ceil(1.5 × its
// election timeout): 2s with etcd's default settings.
func ttlSeconds(ttl time.Duration) (int64, error) {
	if ttl > clientv3.MaxLeaseTTL*time.Second {
		return 0, fmt.Errorf("etcd: ttl %v is longer than etcd's longest lease (%ds)", ttl, int64(clientv3.MaxLeaseTTL))
	}
	return max(int64((ttl+time.Second-1)/time.Second), 1), nil
}

// newLeaseID draws a lease id: positive, never 0 (etcd's "no lease").
func newLeaseID() int64 {
	for {
		if id := int64(rand.Uint64() >> 1); id != 0 {
			return id
		}
	}
}

// collisionTries bounds how many fresh ids a grant draws when the server
// already has a lease with the id drawn. With 63 random bits one collision
// is already beyond unlikely.
const collisionTries = 3

// grant grants a lease of secs seconds and returns its id and the TTL the
// server granted (at least secs). When the grant fails after an attempt
// whose outcome is unknown, the lease may exist: it is revoked in the
// background.
func (d *Driver) grant(ctx context.Context, secs int64) (int64, int64, error) {
	id, ttl := newLeaseID(), secs
	var ambiguous bool
	err := d.call(ctx, &ambiguous, func(actx context.Context) error {
		for collisions := 0; ; collisions++ {
			resp, err := d.leases.LeaseGrant(actx, &pb.LeaseGrantRequest{ID: id, TTL: secs})
			switch {
			case err == nil && resp.Error != "":
				return errors.New(resp.Error)
			case err == nil:
				ttl = max(resp.TTL, secs)
				return nil
			case !errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseExist):
				return err
			case ambiguous:
				return nil // an earlier attempt granted it after all
			case collisions == collisionTries:
				return err
			}
			id = newLeaseID() // someone else's lease has the id
		}
	})
	if err != nil {
		if ambiguous {
			d.revokeLater(id)
		}
		return 0, 0, err
	}
	return id, ttl, nil
}

// acquisitionLease is the lease one acquisition attempt puts its lock on:
// granted for it, or taken from the Driver's pool and renewed while the
// attempt's Txn runs (see leasepool.go).
type acquisitionLease struct {
	id     int64
	info   leaseInfo
	reused bool // taken from the pool
	// renewal delivers the result of a reused lease's renewal; nil for a
	// granted lease, or once collected.
	renewal     chan renewal
	stopRenewal context.CancelFunc
	renewedOK   bool
}

type renewal struct {
	ttl int64
	err error
}

// leaseFor returns the lease for an acquisition of secs seconds: an idle
// one from the pool, whose renewal starts at once, or a new grant.
func (d *Driver) leaseFor(ctx context.Context, secs int64) (*acquisitionLease, error) {
	now := time.Now()
	idle, ok, stale := d.pool.take(secs, now)
	for _, id := range stale {
		d.revokeLater(id)
	}
	if ok {
		rctx, stop := context.WithCancel(ctx)
		a := &acquisitionLease{id: idle.id, info: idle.leaseInfo, reused: true, renewal: make(chan renewal, 1), stopRenewal: stop}
		a.info.renewed = now
		go func() {
			ttl, err := d.keepAliveOnce(rctx, idle.id)
			a.renewal <- renewal{ttl, err}
		}()
		return a, nil
	}
	id, ttl, err := d.grant(ctx, secs)
	if err != nil {
		return nil, err
	}
	return &acquisitionLease{id: id, info: leaseInfo{secs: secs, ttl: ttl, renewed: now}, renewedOK: true}, nil
}

// confirm waits for a reused lease's renewal and reports whether it
// renewed the lease for at least its TTL: only then does an acquisition on
// it hold for the TTL from its send time. A granted lease is confirmed.
func (a *acquisitionLease) confirm() bool {
	if a.renewal != nil {
		r := <-a.renewal
		a.renewal = nil
		a.stopRenewal()
		a.renewedOK = r.err == nil && r.ttl >= a.info.secs
		if a.renewedOK {
			a.info.ttl = r.ttl
		}
	}
	return a.renewedOK
}

// held records that the lease holds one of the Driver's locks now.
func (d *Driver) held(a *acquisitionLease) { d.pool.hold(a.id, a.info) }

// unused gives back a lease that the attempt did not put a lock on: to the
// pool when it is known good, else revoked.
func (d *Driver) unused(a *acquisitionLease) {
	if a.confirm() && d.pool.put(idleLease{a.id, a.info}, time.Now()) {
		return
	}
	d.revokeLater(a.id)
}

// abandon gives up a lease that a lock may be on (the attempt's outcome is
// unknown): revoking it frees whatever the attempt took.
func (d *Driver) abandon(a *acquisitionLease) {
	if a.renewal != nil {
		a.stopRenewal()
	}
	d.revokeLater(a.id)
}

// emptied handles a lease whose lock the Driver has just deleted: kept for
// reuse if it is one of the Driver's own, else revoked.
func (d *Driver) emptied(id int64) {
	if id == 0 {
		return
	}
	if info, ok := d.pool.release(id); ok && d.pool.put(idleLease{id, info}, time.Now()) {
		return
	}
	d.revokeLater(id)
}

// keepAliveOnce renews lease id to its full TTL and returns that TTL in
// seconds, or 0 when the lease is gone (revoked, or expired: the server
// does not renew an expired lease, even one it has not deleted yet).
func (d *Driver) keepAliveOnce(ctx context.Context, id int64) (int64, error) {
	var ttl int64
	err := d.call(ctx, nil, func(actx context.Context) error {
		stream, err := d.leases.LeaseKeepAlive(actx)
		if err != nil {
			return err
		}
		// The stream ends with actx, which call cancels after the attempt.
		if err := stream.Send(&pb.LeaseKeepAliveRequest{ID: id}); err != nil {
			return err
		}
		resp, err := stream.Recv()
		if err != nil {
			return err
		}
		ttl = max(resp.TTL, 0)
		return nil
	})
	return ttl, err
}

// revoke revokes lease id, deleting the keys attached to it. A lease that is
// already gone is not an error.
func (d *Driver) revoke(ctx context.Context, closing <-chan struct{}, id int64) error {
	return d.retry(ctx, closing, nil, func(actx context.Context) error {
		_, err := d.leases.LeaseRevoke(actx, &pb.LeaseRevokeRequest{ID: id})
		if errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) {
			return nil
		}
		return err
	})
}

// remaining returns how long lease id has left, in whole seconds rounded
// toward zero (so 0 both just before and just after its expiry), and false
// when it is gone.
func (d *Driver) remaining(ctx context.Context, id int64) (int64, bool, error) {
	var ttl int64
	err := d.call(ctx, nil, func(actx context.Context) error {
		resp, err := d.leases.LeaseTimeToLive(actx, &pb.LeaseTimeToLiveRequest{ID: id})
		if errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) {
			ttl = -1
			return nil
		}
		if err != nil {
			return err
		}
		ttl = resp.TTL
		return nil
	})
	return ttl, ttl >= 0, err
}
