package etcd

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/driver"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

// cycleOn takes and releases a key, and waits for one, through d.
func cycleOn(t *testing.T, d *Driver) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	key, owner := testKey(t, "cycle"), newOwner()
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		return errors.Join(errors.New("Acquire failed"), err)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		return errors.Join(errors.New("Release failed"), err)
	}
	if _, err := d.AcquireWait(ctx, key, owner, time.Minute); err != nil {
		return err
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		return errors.Join(errors.New("Release after AcquireWait failed"), err)
	}
	return nil
}

func TestAuthentication(t *testing.T) {
	const rootPassword, lockerPassword = "root-Pw9", "locker-Pw9"
	c := etcdtest.Start(t)
	cli := c.Client(t)
	ctx := t.Context()
	// root, and a user with read-write on the driver's prefix only.
	for _, step := range []func() error{
		func() error { _, err := cli.UserAdd(ctx, "root", rootPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "root", "root"); return err },
		func() error { _, err := cli.RoleAdd(ctx, "locker"); return err },
		func() error {
			_, err := cli.RoleGrantPermission(ctx, "locker", DefaultPrefix, clientv3.GetPrefixRangeEnd(DefaultPrefix), clientv3.PermissionType(clientv3.PermReadWrite))
			return err
		},
		func() error { _, err := cli.UserAdd(ctx, "locker", lockerPassword); return err },
		func() error { _, err := cli.UserGrantRole(ctx, "locker", "locker"); return err },
		func() error { _, err := cli.UserAdd(ctx, "nobody", lockerPassword); return err },
		func() error { _, err := cli.AuthEnable(ctx); return err },
	} {
		if err := step(); err != nil {
			t.Fatalf("setting up auth: %v", err)
		}
	}
	host := strings.TrimPrefix(c.URL(), "etcd://")

	t.Run("UserWithRightsOnThePrefix", func(t *testing.T) {
		d := openDriver(t, "etcd://locker:"+lockerPassword+"@"+host)
		if err := cycleOn(t, d); err != nil {
			t.Fatalf("a user with read-write on %q: %v", DefaultPrefix, err)
		}
	})
	t.Run("UserWithoutRights", func(t *testing.T) {
		d := openDriver(t, "etcd://nobody:"+lockerPassword+"@"+host)
		ok, err := d.Acquire(ctx, testKey(t, "denied"), newOwner(), time.Minute)
		if err == nil || ok {
			t.Fatalf("Acquire by a user without rights = %v, %v; want an error, never contention", ok, err)
		}
		if !strings.Contains(err.Error(), "permission denied") {
			t.Errorf("Acquire by a user without rights: %v; want etcd's permission error", err)
		}
	})
	t.Run("WrongPassword", func(t *testing.T) {
		const wrong = "wrong-Pw9"
		d, err := Open("etcd://locker:" + wrong + "@" + host)
		if err == nil {
			d.Close()
			t.Fatal("Open with a wrong password succeeded; with a user, Open authenticates")
		}
		if errors.Is(err, driver.ErrBadURL) || strings.Contains(err.Error(), wrong) {
			t.Errorf("Open with a wrong password = %v; want an authentication error that does not show the password", err)
		}
	})
}

func TestTLS(t *testing.T) {
	c := etcdtest.Start(t, etcdtest.WithTLS())
	if err := cycleOn(t, openDriver(t, c.URL())); err != nil {
		t.Fatalf("over TLS with the cluster's CA: %v", err)
	}
	// Without the CA the server's certificate is not trusted: an error,
	// not contention, within the call's context.
	d := openDriver(t, "etcds://"+strings.Join(c.Endpoints(), ","))
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	if ok, err := d.Acquire(ctx, testKey(t, "untrusted"), newOwner(), time.Minute); err == nil || ok {
		t.Fatalf("Acquire over TLS without the CA = %v, %v; want an error", ok, err)
	}
}
