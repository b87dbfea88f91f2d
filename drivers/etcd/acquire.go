package etcd

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Acquire takes key for owner for ttl, or resets the TTL if owner holds it
// already: one Txn on a lease of the TTL, reused or granted. A free key
// that waiters queued for goes to the first of them, not to Acquire.
func (d *Driver) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	token, err := d.acquire(ctx, key, owner, ttl)
	return token != 0, err
}

// AcquireFenced is Acquire that also returns the acquisition's fencing
// token: the revision of the Txn that created the lock key (its create
// revision), which is global to the cluster and only increases.
func (d *Driver) AcquireFenced(ctx context.Context, key, owner string, ttl time.Duration) (uint64, bool, error) {
	token, err := d.acquire(ctx, key, owner, ttl)
	return token, token != 0, err
}

// acquire runs the acquiring Txn on a lease of the TTL and returns the
// token, 0 when the key is not free for owner. The lease is a reused one
// when the Driver has one (renewed alongside the Txn), else a new grant; a
// lease that ends up holding nothing goes back to the pool or is revoked.
func (d *Driver) acquire(ctx context.Context, key, owner string, ttl time.Duration) (uint64, error) {
	if err := d.usableFor(ctx, key, owner); err != nil {
		return 0, err
	}
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return 0, err
	}
	k := keysFor(d.prefix, key)
	value := d.lockValue(owner)
	for {
		lease, err := d.leaseFor(ctx, secs)
		if err != nil {
			return 0, d.fail(ctx, "acquire", err)
		}
		var resp *clientv3.TxnResponse
		err = d.call(ctx, nil, func(actx context.Context) error {
			var err error
			resp, err = d.kv.Txn(actx).
				If(freeAndUnqueued(k)...).
				Then(clientv3.OpPut(k.lock, value, clientv3.WithLease(clientv3.LeaseID(lease.id)))).
				Else(reacquire(k, owner, lease.id)).
				Commit()
			return err
		})
		if err != nil && lease.reused && !lease.confirm() && errors.Is(rpctypes.Error(err), rpctypes.ErrLeaseNotFound) {
			continue // the kept lease was gone: nothing was written; take a new one
		}
		if err != nil {
			d.abandon(lease) // the Txn may have run: whatever it took goes
			return 0, d.fail(ctx, "acquire", err)
		}
		token, previous := acquired(resp)
		if token == 0 {
			d.unused(lease)
			return 0, nil
		}
		if !lease.confirm() {
			// The reused lease was not renewed: the lock on it may go
			// before its TTL. Take it again on a new lease; the Txn finds
			// owner holding it (a re-acquire) unless the revocation came
			// first.
			d.revokeLater(lease.id)
			continue
		}
		d.held(lease)
		if previous != lease.id {
			d.emptied(previous) // a re-acquire moved the key off it
		}
		return token, nil
	}
}

// freeAndUnqueued is the condition for taking a key at once: no lock key,
// and nobody in its queue.
func freeAndUnqueued(k lockKeys) []clientv3.Cmp {
	return []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(k.lock), "=", 0),
		// Over a range, a compare must hold for every key in it; over an
		// empty range, etcd compares a key that does not exist.
		clientv3.Compare(clientv3.CreateRevision(k.queue), "=", 0).WithRange(k.queueEnd),
	}
}

// reacquire is the Else branch of an acquiring Txn: if owner holds the key
// already, move it to the new lease, which resets its TTL and keeps its
// create revision (the token) and value (the time it was taken).
//
// It is also what makes the acquiring Txn safe to repeat: a repeat after an
// attempt that took the key finds owner holding it, on this very lease.
func reacquire(k lockKeys, owner string, lease int64) clientv3.Op {
	return clientv3.OpTxn(heldBy(k.lock, owner), []clientv3.Op{
		clientv3.OpPut(k.lock, "", clientv3.WithIgnoreValue(), clientv3.WithLease(clientv3.LeaseID(lease)), clientv3.WithPrevKV()),
	}, nil)
}

// acquired decodes the response of an acquiring Txn whose Else branch is
// reacquire: the token (0 when the key was not taken), and for a re-acquire
// the lease the key had before.
func acquired(resp *clientv3.TxnResponse) (token uint64, previous int64) {
	if resp.Succeeded {
		return uint64(resp.Header.Revision), 0
	}
	if len(resp.Responses) == 0 {
		return 0, 0
	}
	inner := resp.Responses[0].GetResponseTxn()
	if inner == nil || !inner.Succeeded || len(inner.Responses) == 0 {
		return 0, 0
	}
	prev := inner.Responses[0].GetResponsePut().GetPrevKv()
	if prev == nil {
		return 0, 0 // cannot happen: the guard has just seen the key
	}
	return uint64(prev.CreateRevision), prev.Lease
}

// Extend sets key's TTL to ttl from now if owner holds it; it never takes a
// free key. It reads the key under the owner guard and renews its lease, two
// round trips; if the lease was granted shorter than ttl, the key moves to
// a new one (a grant and a Txn more).
//
// A renewal that comes after the lease's expiry fails even before the
// server has deleted the key, so Extend never revives an expired lock.
func (d *Driver) Extend(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	if err := d.usableFor(ctx, key, owner); err != nil {
		return false, err
	}
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return false, err
	}
	k := keysFor(d.prefix, key)
	var (
		held  bool
		lease int64
	)
	err = d.call(ctx, nil, func(actx context.Context) error {
		resp, err := d.kv.Txn(actx).If(heldBy(k.lock, owner)...).Then(clientv3.OpGet(k.lock)).Commit()
		if err != nil {
			return err
		}
		held = false
		if resp.Succeeded {
			if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) == 1 {
				held, lease = true, kvs[0].Lease
			}
		}
		return nil
	})
	if err != nil {
		return false, d.fail(ctx, "extend", err)
	}
	if !held {
		return false, nil
	}
	if lease != 0 {
		sent := time.Now()
		granted, err := d.keepAliveOnce(ctx, lease)
		switch {
		case err != nil:
			return false, d.fail(ctx, "extend", err)
		case granted == 0:
			return false, nil // expired: the server is deleting the key
		case granted >= secs:
			d.pool.renewed(lease, granted, sent)
			return true, nil
		}
	}
	return d.moveToNewLease(ctx, k, owner, lease, secs)
}

// moveToNewLease is Extend to a TTL longer than the key's lease: grant one
// of secs seconds and move the key to it under the owner guard.
func (d *Driver) moveToNewLease(ctx context.Context, k lockKeys, owner string, old, secs int64) (bool, error) {
	sent := time.Now()
	lease, ttl, err := d.grant(ctx, secs)
	if err != nil {
		return false, d.fail(ctx, "extend", err)
	}
	var moved bool
	err = d.call(ctx, nil, func(actx context.Context) error {
		resp, err := d.kv.Txn(actx).
			If(heldBy(k.lock, owner)...).
			Then(clientv3.OpPut(k.lock, "", clientv3.WithIgnoreValue(), clientv3.WithLease(clientv3.LeaseID(lease)))).
			Commit()
		if err != nil {
			return err
		}
		moved = resp.Succeeded
		return nil
	})
	if err != nil || !moved {
		d.revokeLater(lease)
		if err != nil {
			return false, d.fail(ctx, "extend", err)
		}
		return false, nil
	}
	d.pool.hold(lease, leaseInfo{secs: secs, ttl: ttl, renewed: sent})
	d.emptied(old)
	return true, nil
}
