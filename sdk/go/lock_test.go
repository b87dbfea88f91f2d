package lock_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
	lock "github.com/zerotal/lock/sdk/go"
)

func newManager(t testing.TB, opts ...lock.ManagerOption) *lock.Manager {
	t.Helper()
	m := lock.New(memory.New(), opts...)
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// keyRecorder wraps a driver and records the keys the engine hands it.
type keyRecorder struct {
	driver.Driver
	mu   sync.Mutex
	keys []string
}

func (r *keyRecorder) Acquire(ctx context.Context, key, owner string, ttl time.Duration) (bool, error) {
	r.mu.Lock()
	r.keys = append(r.keys, key)
	r.mu.Unlock()
	return r.Driver.Acquire(ctx, key, owner, ttl)
}

func TestPrefixDefaults(t *testing.T) {
	cases := []struct {
		name string
		opts []lock.ManagerOption
		want string
	}{
		{"New uses the default prefix", nil, "zerotal_lock:job"},
		{"WithPrefix sets it", []lock.ManagerOption{lock.WithPrefix("app:")}, "app:job"},
		{`WithPrefix("") means none`, []lock.ManagerOption{lock.WithPrefix("")}, "job"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := &keyRecorder{Driver: memory.New()}
			m := lock.New(rec, c.opts...)
			defer m.Close()
			if err := m.Try(context.Background(), "job", time.Second, func(context.Context) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if len(rec.keys) != 1 || rec.keys[0] != c.want {
				t.Fatalf("driver saw keys %q; want [%q]", rec.keys, c.want)
			}
		})
	}
}

func TestOpenSelectsDriversAndRejectsUnknownOnes(t *testing.T) {
	_, err := lock.Open(lock.Config{Driver: "carrier-pigeon"})
	if err == nil {
		t.Fatal("Open accepted an unknown driver")
	}
	for _, name := range []string{"carrier-pigeon", "memory"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not mention %q", err, name)
		}
	}
}

func TestMemoryManagersShareTheProcessTable(t *testing.T) {
	a, err := lock.Open(lock.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := lock.Open(lock.Config{Driver: "memory"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	key := lock.Key(t.Name())
	la := a.Make(key, time.Minute)
	if ok, err := la.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	defer la.Release(ctx)
	if ok, _ := b.Make(key, time.Minute).Acquire(ctx); ok {
		t.Fatal("two memory managers in one process do not exclude each other")
	}
	// A private table is private.
	c := lock.New(memory.New())
	defer c.Close()
	if ok, _ := c.Make(key, time.Minute).Acquire(ctx); !ok {
		t.Fatal("memory.New() is not private")
	}
}

func TestFromContextGivesTheHeldLock(t *testing.T) {
	m := newManager(t)
	ctx := context.Background()
	if _, ok := lock.FromContext(ctx); ok {
		t.Fatal("FromContext outside fn found a lock")
	}
	err := m.Try(ctx, "k", time.Minute, func(ctx context.Context) error {
		l, ok := lock.FromContext(ctx)
		if !ok || l.Key() != "k" || !l.IsAcquired() || l.Token() == 0 {
			t.Errorf("FromContext = %v, %v", l, ok)
		}
		if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(l.Owner()) {
			t.Errorf("Owner() = %q; want 32 lowercase hex digits", l.Owner())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEachAcquisitionGetsAFreshOwnerAndAHigherToken(t *testing.T) {
	m := newManager(t)
	ctx := context.Background()
	l := m.Make("k", time.Minute)
	var owners []string
	var tokens []uint64
	for range 3 {
		if ok, err := l.Acquire(ctx); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
		owners = append(owners, l.Owner())
		tokens = append(tokens, l.Token())
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if owners[0] == owners[1] || owners[1] == owners[2] {
		t.Fatalf("owner tokens repeat: %q", owners)
	}
	if !(tokens[0] < tokens[1] && tokens[1] < tokens[2]) {
		t.Fatalf("tokens %v do not increase", tokens)
	}
}

func TestReleaseNeverFreesAnotherOwnersLock(t *testing.T) {
	m := newManager(t)
	ctx := context.Background()
	first := m.Make("k", 20*time.Millisecond)
	if ok, _ := first.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	second := m.Make("k", time.Minute)
	if err := second.Block(ctx, lock.WithTimeout(5*time.Second), lock.WithRetryDelay(time.Millisecond)); err != nil {
		t.Fatalf("second never got the expired lock: %v", err)
	}
	if err := first.Release(ctx); err != nil { // late release by the expired holder
		t.Fatal(err)
	}
	if ok, _ := m.Make("k", time.Minute).Acquire(ctx); ok {
		t.Fatal("the expired holder's release freed the new holder's lock")
	}
	if !second.IsAcquired() {
		t.Fatal("second lost its lock")
	}
}

func TestBlockOnMemoryWakesOnReleaseWithoutPolling(t *testing.T) {
	table := memory.NewTable()
	m := lock.New(table.Driver())
	defer m.Close()
	ctx := context.Background()
	holder := m.Make("k", time.Minute)
	if ok, _ := holder.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	got := make(chan error, 1)
	go func() {
		got <- m.Block(ctx, "k", time.Minute, func(context.Context) error { return nil },
			lock.WithTimeout(time.Minute), lock.WithRetryDelay(time.Hour))
	}()
	waitQueued(t, table, "zerotal_lock:k")
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("Block = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not wake on release (retry delay is an hour)")
	}
}

func TestLostWithoutRefreshAndKeptWithRefresh(t *testing.T) {
	// In a synctest bubble: a refresher stalled by a loaded machine
	// must not lose a lock whose TTL is milliseconds of real time.
	synctest.Test(t, func(t *testing.T) {
		m := newManager(t)
		ctx := context.Background()
		const ttl = 40 * time.Millisecond
		work := func(ctx context.Context) error {
			select {
			case <-time.After(4 * ttl):
				return nil
			case <-ctx.Done():
				return nil // claims success; the engine must still report the loss
			}
		}
		err := m.Try(ctx, "k", ttl, work)
		var lost *lock.LostError
		if !errors.As(err, &lost) || !errors.Is(err, lock.ErrLost) || lost.Key != "k" {
			t.Fatalf("without refresh: err = %v; want *LostError", err)
		}
		if err := m.Try(ctx, "k", ttl, work, lock.WithRefresh()); err != nil {
			t.Fatalf("with refresh: err = %v", err)
		}
		if err := m.Try(ctx, "k", ttl, work, lock.WithRefreshEvery(5*time.Millisecond)); err != nil {
			t.Fatalf("with refresh every 5ms: err = %v", err)
		}
	})
}

// A loss to another owner names the new holder's fencing token, and the
// reason and token are fields, not only words.
func TestLostToAnotherOwnerNamesItsToken(t *testing.T) {
	ctx := context.Background()
	d := memory.New()
	m := lock.New(d)
	t.Cleanup(func() { _ = m.Close() })
	other := lock.New(d)
	t.Cleanup(func() { _ = other.Close() })
	var thief *lock.ManagedLock
	err := m.Try(ctx, "k", time.Minute, func(ctx context.Context) error {
		if err := other.Make("k", time.Minute).ForceRelease(ctx); err != nil {
			return err
		}
		thief = other.Make("k", time.Minute)
		if ok, err := thief.Acquire(ctx); !ok || err != nil {
			return fmt.Errorf("the thief's acquire = %v, %v", ok, err)
		}
		<-ctx.Done()
		return nil
	}, lock.WithRefreshEvery(5*time.Millisecond))
	var lost *lock.LostError
	if !errors.As(err, &lost) || lost.Reason != lock.LostTakenOver || lost.Token == 0 || lost.Token != thief.Token() {
		t.Fatalf("err = %#v; want LostTakenOver with the thief's token %d", err, thief.Token())
	}
	if want := fmt.Sprintf("(fencing token %d holds it now)", thief.Token()); !strings.Contains(err.Error(), want) {
		t.Errorf("message %q does not say %q", err, want)
	}
}

func TestBadInputIsRejectedWithTheFieldNamed(t *testing.T) {
	m := newManager(t)
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	cases := map[string]func() error{
		"key":         func() error { return m.Try(ctx, "", time.Second, fn) },
		"ttl":         func() error { return m.Try(ctx, "k", 0, fn) },
		"fn":          func() error { return m.Try(ctx, "k", time.Second, nil) },
		"timeout":     func() error { return m.Block(ctx, "k", time.Second, fn, lock.WithTimeout(-1)) },
		"retry delay": func() error { return m.Block(ctx, "k", time.Second, fn, lock.WithRetryDelay(-1)) },
	}
	for field, call := range cases {
		err := call()
		if !errors.Is(err, lock.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v; want ErrInvalidArgument naming %q", field, err, field)
		}
	}
}

func TestCloseEndsRunningWorkAndLaterCalls(t *testing.T) {
	m := lock.New(memory.New())
	started := make(chan struct{})
	res := make(chan error, 1)
	go func() {
		res <- m.Try(context.Background(), "k", time.Minute, func(ctx context.Context) error {
			close(started)
			<-ctx.Done()
			return nil
		}, lock.WithRefresh())
	}()
	<-started
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-res; !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Try = %v; want ErrClosed", err)
	}
	if err := m.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	err := m.Try(context.Background(), "k", time.Minute, func(context.Context) error { return nil })
	if !errors.Is(err, lock.ErrClosed) {
		t.Fatalf("Try after Close = %v", err)
	}
}

func TestDefaultAndSetDefault(t *testing.T) {
	mine := lock.New(memory.New())
	defer mine.Close()
	prev := lock.Default()
	lock.SetDefault(mine)
	defer lock.SetDefault(prev)
	if lock.Default() != mine {
		t.Fatal("SetDefault did not take")
	}
	ctx := context.Background()
	held := mine.Make("k", time.Minute)
	if ok, _ := held.Acquire(ctx); !ok {
		t.Fatal("acquire")
	}
	defer held.Release(ctx)
	err := lock.Try(ctx, "k", time.Minute, func(context.Context) error { return nil })
	if !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("lock.Try on the default manager = %v; want ErrNotAcquired", err)
	}
	if lock.Make("k", time.Minute).Key() != "k" {
		t.Fatal("lock.Make")
	}
}

func TestContendingGoroutinesTakeTurns(t *testing.T) {
	m := newManager(t)
	var inside, overlaps, runs atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 250 {
				err := m.Block(context.Background(), "hot", time.Second, func(context.Context) error {
					if inside.Add(1) != 1 {
						overlaps.Add(1)
					}
					inside.Add(-1)
					runs.Add(1)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if overlaps.Load() != 0 || runs.Load() != 8*250 {
		t.Fatalf("overlaps = %d, runs = %d", overlaps.Load(), runs.Load())
	}
}
