package sqlite

import (
	"testing"
	"time"
)

func TestReleaseNotifiesSubscribersOfEveryDriverOnTheFile(t *testing.T) {
	first, path := openFile(t)
	second := openPath(t, path)
	ctx := testContext(t)
	owner := newOwner(t)
	mustAcquire(t, first, "k", owner, time.Minute)

	notices, cancel := second.Subscribe("k")
	defer cancel()
	other, cancelOther := second.Subscribe("other")
	defer cancelOther()
	if ok, err := first.Release(ctx, "k", owner); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	// Release notifies before it returns, so the notice is already queued.
	select {
	case <-notices:
	default:
		t.Fatal("a release through one driver did not notify a subscriber of another driver on the same file")
	}
	select {
	case <-other:
		t.Fatal("a release of k notified a subscriber of another key")
	default:
	}
}

func TestFailedReleaseSendsNoNotice(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		mustAcquire(t, d, "k", newOwner(t), time.Minute)
		notices, cancel := d.Subscribe("k")
		defer cancel()
		if ok, err := d.Release(testContext(t), "k", newOwner(t)); ok || err != nil {
			t.Fatalf("foreign Release = %v, %v", ok, err)
		}
		select {
		case <-notices:
			t.Fatal("a release that freed nothing sent a notice")
		default:
		}
	})
}

func TestCancelledSubscriptionGetsNothing(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		owner := newOwner(t)
		mustAcquire(t, d, "k", owner, time.Minute)
		notices, cancel := d.Subscribe("k")
		cancel()
		cancel() // idempotent
		if ok, err := d.Release(testContext(t), "k", owner); !ok || err != nil {
			t.Fatalf("Release = %v, %v", ok, err)
		}
		select {
		case <-notices:
			t.Fatal("a cancelled subscription received a notice")
		default:
		}
		if n := len(d.hub.subs); n != 0 {
			t.Fatalf("%d keys still have subscribers after cancel", n)
		}
	})
}

func TestFullSubscriptionDropsNoticeWithoutBlocking(t *testing.T) {
	backends(t, func(t *testing.T, d *Driver) {
		notices, cancel := d.Subscribe("k")
		defer cancel()
		for range 3 {
			owner := newOwner(t)
			mustAcquire(t, d, "k", owner, time.Minute)
			if ok, err := d.Release(testContext(t), "k", owner); !ok || err != nil {
				t.Fatalf("Release = %v, %v", ok, err)
			}
		}
		if got := len(notices); got != 1 {
			t.Fatalf("%d notices queued; want 1 (the buffer)", got)
		}
	})
}

func TestHubIsForgottenWhenLastDriverCloses(t *testing.T) {
	first, path := openFile(t)
	second := openPath(t, path)
	if first.hub != second.hub {
		t.Fatal("two drivers on one file do not share a hub")
	}
	key := first.hubKey
	for _, d := range []*Driver{first, second} {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
	hubs.mu.Lock()
	_, ok := hubs.m[key]
	hubs.mu.Unlock()
	if ok {
		t.Fatal("hub still registered after every driver closed")
	}
}
