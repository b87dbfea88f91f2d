package conformance

import (
	"context"
	"time"

	"github.com/zerotal/lock/driver"
)

// closedCallBound is how long a call on a closed driver may take to fail.
const closedCallBound = time.Second

// testClose checks that Close is idempotent, that a closed instance refuses
// every call without panicking, and that it leaves the other instances alone.
func testClose(e *env) {
	e.sub("Idempotent", func(e *env) {
		d := e.open()
		if err := d.Close(); err != nil {
			e.t.Fatalf("Close: unexpected error: %v", err)
		}
		if err := d.Close(); err != nil {
			e.t.Errorf("second Close = %v, want nil: Close is idempotent", err)
		}
	})
	e.sub("MethodsFail", func(e *env) {
		d := e.open()
		key, owner := e.key("closed"), newOwner()
		e.mustAcquire(d, key, owner, hold)
		if err := d.Close(); err != nil {
			e.t.Fatalf("Close: unexpected error: %v", err)
		}
		testClosedCalls(e, d, key, owner)
	})
	e.sub("OthersUnaffected", func(e *env) {
		closing, other := e.open(), e.open()
		key, owner := e.key("survivor"), newOwner()
		e.mustAcquire(other, key, owner, hold)
		e.mustAcquire(closing, e.key("closing"), newOwner(), hold)
		if err := closing.Close(); err != nil {
			e.t.Fatalf("Close: unexpected error: %v", err)
		}
		if !e.exists(other, key) {
			e.t.Errorf("Exists(%s) on another instance = false after one instance closed, want true", show(key))
		}
		if !e.release(other, key, owner) {
			e.t.Errorf("Release(%s) on another instance after one instance closed = false, want true", show(key))
		}
		if !e.acquire(other, key, owner, hold) {
			e.t.Errorf("Acquire(%s) on another instance after one instance closed = false, want true", show(key))
		}
		e.release(other, key, owner)
	})
	e.sub("UnblocksWaiter", func(e *env) {
		closing, holder := e.open(), e.open()
		w, ok := closing.(driver.Waiter)
		if !ok {
			e.t.Skipf("%T does not implement driver.Waiter", closing)
		}
		key, owner := e.key("awaited"), newOwner()
		e.mustAcquire(holder, key, owner, hold)
		p := e.startWait(e.ctx, w, key, newOwner(), hold)
		e.stagger()
		if err := closing.Close(); err != nil {
			e.t.Fatalf("Close: unexpected error: %v", err)
		}
		if r := e.await(p, waitBound, "its driver instance was closed"); r.err == nil {
			e.t.Errorf("AcquireWait blocked when its instance closed returned nil, want an error")
		}
		e.release(holder, key, owner)
	})
}

// testClosedCalls calls every method of the closed instance d and checks
// that each returns an error promptly and none panics. key is a key d held
// for owner when it closed.
func testClosedCalls(e *env, d driver.Driver, key, owner string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.ctx, closedCallBound)
	defer cancel()
	free := e.key("free")
	// refused checks that a call on the closed instance failed, and failed
	// with its own error rather than by running out of time.
	refused := func(call string, err error) {
		e.t.Helper()
		switch {
		case err == nil:
			e.t.Errorf("%s after Close returned no error, want one", call)
		case ctx.Err() != nil:
			e.t.Errorf("%s after Close returned only when its %v context ended (%v), want an error at once", call, closedCallBound, err)
		}
	}
	e.noPanic("Acquire after Close", func() {
		ok, err := d.Acquire(ctx, free, owner, hold)
		refused("Acquire", err)
		if ok {
			e.t.Errorf("Acquire after Close = true, want false")
		}
	})
	e.noPanic("Release after Close", func() {
		_, err := d.Release(ctx, key, owner)
		refused("Release", err)
	})
	e.noPanic("ForceRelease after Close", func() {
		refused("ForceRelease", d.ForceRelease(ctx, key))
	})
	e.noPanic("Exists after Close", func() {
		_, err := d.Exists(ctx, key)
		refused("Exists", err)
	})
	if x, ok := d.(driver.Extender); ok {
		e.noPanic("Extend after Close", func() {
			_, err := x.Extend(ctx, key, owner, hold)
			refused("Extend", err)
		})
	}
	if f, ok := d.(driver.Fencer); ok {
		e.noPanic("AcquireFenced after Close", func() {
			_, _, err := f.AcquireFenced(ctx, free, owner, hold)
			refused("AcquireFenced", err)
		})
	}
	if w, ok := d.(driver.Waiter); ok {
		e.noPanic("AcquireWait after Close", func() {
			_, err := w.AcquireWait(ctx, free, owner, hold)
			refused("AcquireWait", err)
		})
	}
	if in, ok := d.(driver.Inspector); ok {
		e.noPanic("Inspect after Close", func() {
			_, _, err := in.Inspect(ctx, key)
			refused("Inspect", err)
		})
	}
	if n, ok := d.(driver.Notifier); ok {
		e.noPanic("Subscribe after Close", func() {
			_, cancel := n.Subscribe(key)
			if cancel == nil {
				e.t.Errorf("Subscribe after Close returned a nil cancel func; cancel must always be callable")
				return
			}
			cancel()
		})
	}
}
