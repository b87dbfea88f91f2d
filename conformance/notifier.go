package conformance

import (
	"time"

	"github.com/zerotal/lock/driver"
)

// noticeBound is how long a notice may take to arrive after the key frees:
// generous, since a networked backend may deliver notices asynchronously.
const noticeBound = 2 * time.Second

// testNotifier checks that a subscriber hears about a key freeing, and that
// ending a subscription is idempotent and safe.
func testNotifier(e *env) {
	a := e.open()
	n, ok := a.(driver.Notifier)
	if !ok {
		e.t.Skipf("%T does not implement driver.Notifier", a)
	}
	// expectNotice frees key with free and fails the subtest unless a
	// notice arrives on a fresh subscription within noticeBound.
	expectNotice := func(e *env, how string, free func(key, owner string)) {
		key, owner := e.key("noticed"), newOwner()
		notices, cancel := n.Subscribe(key)
		defer cancel()
		e.mustAcquire(a, key, owner, hold)
		// Notices are hints and may come spuriously: only one that comes
		// after the key frees proves anything.
		drain(notices)
		free(key, owner)
		timer := time.NewTimer(noticeBound)
		defer timer.Stop()
		select {
		case <-notices:
		case <-timer.C:
			e.t.Errorf("no notice on Subscribe(%s) within %v after %s", show(key), noticeBound, how)
		}
	}
	e.sub("Release", func(e *env) {
		expectNotice(e, "its holder released it", func(key, owner string) {
			if !e.release(a, key, owner) {
				e.t.Fatalf("Release(%s) by its holder = false, want true", show(key))
			}
		})
	})
	e.sub("ForceRelease", func(e *env) {
		expectNotice(e, "ForceRelease", func(key, _ string) { e.forceRelease(a, key) })
	})
	e.sub("CancelIdempotent", func(e *env) {
		key, owner := e.key("cancelled"), newOwner()
		_, cancel := n.Subscribe(key)
		cancel()
		e.noPanic("calling a Subscribe cancel func a second time", cancel)
		// A release after the subscription ended must not trip over it.
		e.mustAcquire(a, key, owner, hold)
		e.release(a, key, owner)
	})
}

// drain empties a notice channel without blocking.
func drain(notices <-chan struct{}) {
	for range cap(notices) + 1 {
		select {
		case <-notices:
		default:
			return
		}
	}
}

// noPanic runs f and turns a panic into a subtest failure naming what.
func (e *env) noPanic(what string, f func()) {
	e.t.Helper()
	defer func() {
		if v := recover(); v != nil {
			e.t.Errorf("%s panicked: %v", what, v)
		}
	}()
	f()
}
