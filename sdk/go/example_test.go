package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
	lock "github.com/zerotal/lock/sdk/go"
)

// Try takes the lock once and runs the work under it, or reports at once
// that someone else holds it.
func ExampleManager_Try() {
	m := lock.New(memory.New())
	defer m.Close()
	ctx := context.Background()

	err := m.Try(ctx, lock.Key("invoice", 123), 10*time.Second, func(ctx context.Context) error {
		fmt.Println("processing invoice 123")
		return nil
	})
	fmt.Println("err:", err)

	// While one caller holds the key, a second Try fails fast with a 409.
	_ = m.Try(ctx, "report", time.Minute, func(ctx context.Context) error {
		err := m.Try(ctx, "report", time.Minute, func(context.Context) error { return nil })
		var busy *lock.NotAcquiredError
		if errors.As(err, &busy) {
			fmt.Println("busy:", busy.Key, busy.HTTPStatus() == http.StatusConflict)
		}
		return nil
	})
	// Output:
	// processing invoice 123
	// err: <nil>
	// busy: report true
}

// Block waits for the lock. With refresh, the TTL only says how long after a
// crash someone else may take over: the lock is extended while the work runs,
// and the work's ctx ends if the lock is lost.
func ExampleManager_Block() {
	m := lock.New(memory.New())
	defer m.Close()

	err := m.Block(context.Background(), "report:monthly", 300*time.Millisecond,
		func(ctx context.Context) error {
			select {
			case <-time.After(time.Second): // outlives the TTL three times over
				fmt.Println("report built")
				return nil
			case <-ctx.Done():
				return context.Cause(ctx) // the lock was lost: stop working
			}
		},
		lock.WithTimeout(5*time.Second), lock.WithRefresh())
	fmt.Println("err:", err)
	// Output:
	// report built
	// err: <nil>
}

// Make returns a handle for flows that span several steps; it does not
// acquire anything by itself.
func ExampleManager_Make() {
	m := lock.New(memory.New())
	defer m.Close()
	ctx := context.Background()

	l := m.Make("import:batch", time.Minute)
	ok, err := l.Acquire(ctx)
	if err != nil || !ok {
		fmt.Println("busy or failed:", err)
		return
	}
	defer l.Release(ctx)

	for chunk := range 3 {
		if still, err := l.Refresh(ctx); err != nil || !still {
			fmt.Println("lost the import lock")
			return
		}
		fmt.Println("chunk", chunk, "held:", l.IsAcquired())
	}
	// Output:
	// chunk 0 held: true
	// chunk 1 held: true
	// chunk 2 held: true
}

// Inside the work, FromContext gives the held lock, whose fencing token lets
// a downstream store reject writes from a holder whose lock has expired.
func ExampleFromContext() {
	m := lock.New(memory.New())
	defer m.Close()
	ctx := context.Background()

	var tokens []uint64
	for range 2 {
		_ = m.Try(ctx, "ledger", time.Minute, func(ctx context.Context) error {
			l, _ := lock.FromContext(ctx)
			tokens = append(tokens, l.Token())
			return nil
		})
	}
	fmt.Println("tokens increase:", tokens[1] > tokens[0])
	// Output:
	// tokens increase: true
}

// mapDriver is a complete custom driver: the five methods of driver.Driver
// over a map. (A real one would talk to a shared backend.)
type mapDriver struct {
	mu    sync.Mutex
	locks map[string]mapEntry
}

type mapEntry struct {
	owner   string
	expires time.Time
}

func (d *mapDriver) Acquire(_ context.Context, key, owner string, ttl time.Duration) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.locks[key]; ok && e.owner != owner && time.Now().Before(e.expires) {
		return false, nil
	}
	d.locks[key] = mapEntry{owner, time.Now().Add(ttl)}
	return true, nil
}

func (d *mapDriver) Release(_ context.Context, key, owner string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if e, ok := d.locks[key]; !ok || e.owner != owner || !time.Now().Before(e.expires) {
		return false, nil
	}
	delete(d.locks, key)
	return true, nil
}

func (d *mapDriver) ForceRelease(_ context.Context, key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.locks, key)
	return nil
}

func (d *mapDriver) Exists(_ context.Context, key string) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.locks[key]
	return ok && time.Now().Before(e.expires), nil
}

func (d *mapDriver) Close() error { return nil }

var _ driver.Driver = (*mapDriver)(nil)

// A custom driver plugs in with New. The engine adds owner tokens,
// validation, refresh and lost-lock detection on top of its five methods.
func Example_customDriver() {
	m := lock.New(&mapDriver{locks: map[string]mapEntry{}}, lock.WithPrefix("app:"))
	defer m.Close()

	err := m.Try(context.Background(), "cron:nightly", time.Minute, func(ctx context.Context) error {
		fmt.Println("running the nightly job")
		return nil
	})
	fmt.Println("err:", err)
	// Output:
	// running the nightly job
	// err: <nil>
}
