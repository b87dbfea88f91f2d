package etcd

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Release frees key if owner holds it, in one Txn: an owner-guarded delete.
// The first waiter in line sees the delete and takes the key. The lease the
// key had holds nothing afterwards: it is kept for the Driver's next
// acquisition, or revoked in the background.
//
// When an attempt's answer was lost (a timeout, a failover) and the next
// attempt finds the key no longer owner's, Release reports true: most
// likely the lost attempt freed it.
func (d *Driver) Release(ctx context.Context, key, owner string) (bool, error) {
	if err := d.usableFor(ctx, key, owner); err != nil {
		return false, err
	}
	k := keysFor(d.prefix, key)
	var (
		ambiguous, released bool
		lease               int64
	)
	err := d.call(ctx, &ambiguous, func(actx context.Context) error {
		resp, err := d.kv.Txn(actx).
			If(heldBy(k.lock, owner)...).
			Then(clientv3.OpDelete(k.lock, clientv3.WithPrevKV())).
			Commit()
		if err != nil {
			return err
		}
		released = resp.Succeeded
		if released {
			if prev := resp.Responses[0].GetResponseDeleteRange().GetPrevKvs(); len(prev) == 1 {
				lease = prev[0].Lease
			}
		}
		return nil
	})
	if err != nil {
		return false, d.fail(ctx, "release", err)
	}
	if !released {
		return ambiguous, nil
	}
	d.emptied(lease)
	return true, nil
}

// ForceRelease frees key whoever holds it: it reads the key and revokes its
// lease, which deletes exactly that acquisition's key (a new acquisition
// in between has a lease of its own), and is safe to repeat. Freeing a free
// key is not an error.
func (d *Driver) ForceRelease(ctx context.Context, key string) error {
	if err := d.usableFor(ctx, key, ""); err != nil {
		return err
	}
	k := keysFor(d.prefix, key)
	held, err := d.get(ctx, k.lock)
	if err != nil {
		return d.fail(ctx, "force release", err)
	}
	switch {
	case held == nil:
		return nil
	case held.Lease != 0:
		d.pool.release(held.Lease)
		err = d.revoke(ctx, d.closing, held.Lease)
	default:
		// A key without a lease was not written by a Driver; delete that
		// version of it, and only that one.
		err = d.call(ctx, nil, func(actx context.Context) error {
			_, err := d.kv.Txn(actx).
				If(clientv3.Compare(clientv3.CreateRevision(k.lock), "=", held.CreateRevision)).
				Then(clientv3.OpDelete(k.lock)).
				Commit()
			return err
		})
	}
	if err != nil {
		return d.fail(ctx, "force release", err)
	}
	return nil
}

// get reads key, returning nil when it does not exist.
func (d *Driver) get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	var kv *mvccpb.KeyValue
	err := d.call(ctx, nil, func(actx context.Context) error {
		resp, err := d.kv.Get(actx, key)
		if err != nil {
			return err
		}
		kv = nil
		if len(resp.Kvs) == 1 {
			kv = resp.Kvs[0]
		}
		return nil
	})
	return kv, err
}
