package etcd

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/driver"
)

// Exists reports whether key is held, by one linearizable read. The server
// deletes a lock whose lease expired within about half a second (its
// lessor looks for expired leases twice a second), so Exists may still say
// true that long after the TTL.
func (d *Driver) Exists(ctx context.Context, key string) (bool, error) {
	if err := d.usableFor(ctx, key, ""); err != nil {
		return false, err
	}
	var held bool
	err := d.call(ctx, nil, func(actx context.Context) error {
		resp, err := d.kv.Get(actx, keysFor(d.prefix, key).lock, clientv3.WithCountOnly())
		if err != nil {
			return err
		}
		held = resp.Count > 0
		return nil
	})
	if err != nil {
		return false, d.fail(ctx, "exists", err)
	}
	return held, nil
}

// Inspect returns key's holder: a read of the key and one of its lease's
// time to live, which the server gives in whole seconds, so ExpiresAt is
// good to about half a second. Like Exists, Inspect reports a lock held
// until the server has deleted it, up to about half a second after its
// expiry (the time to live of a lease that has just expired reads 0, as
// does one with less than a second left). AcquiredAt is the acquiring
// client's clock.
func (d *Driver) Inspect(ctx context.Context, key string) (driver.Holder, bool, error) {
	if err := d.usableFor(ctx, key, ""); err != nil {
		return driver.Holder{}, false, err
	}
	kv, err := d.get(ctx, keysFor(d.prefix, key).lock)
	if err != nil {
		return driver.Holder{}, false, d.fail(ctx, "inspect", err)
	}
	if kv == nil {
		return driver.Holder{}, false, nil
	}
	h := parseHolder(kv)
	if kv.Lease == 0 {
		return h, true, nil // not a Driver's key: no expiry to tell
	}
	secs, live, err := d.remaining(ctx, kv.Lease)
	switch {
	case err != nil:
		return driver.Holder{}, false, d.fail(ctx, "inspect", err)
	case !live:
		return driver.Holder{}, false, nil
	}
	// The remaining time was rounded down to whole seconds: add half of
	// one to be off by at most that much either way.
	h.ExpiresAt = time.Now().Add(time.Duration(secs)*time.Second + time.Second/2)
	return h, true, nil
}
