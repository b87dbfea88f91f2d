package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

// The smoke tests check the glue between the generated API and the engine:
// that each piece is wired, not how the engine behaves (the behaviour tests
// do that).

// testPrefix returns a prefix of its own for a test, so that tests on shared
// backends never touch each other's keys (or anyone else's).
func testPrefix(t testing.TB) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "zerotal_lock_sdk_test_" + hex.EncodeToString(b[:]) + ":"
}

func TestTryRunsFnWithTheLockInItsContext(t *testing.T) {
	m := New(memory.New())
	defer m.Close()
	ran := false
	err := m.Try(t.Context(), "job", time.Minute, func(ctx context.Context) error {
		ran = true
		l, ok := FromContext(ctx)
		if !ok || l.Key() != "job" || !l.IsAcquired() || len(l.Owner()) != 32 {
			t.Errorf("FromContext in fn = %v, %v: want the held lock on key job", l, ok)
		}
		return nil
	})
	if err != nil || !ran {
		t.Fatalf("Try = %v, ran = %v; want nil, true", err, ran)
	}
	if l, ok := FromContext(t.Context()); ok || l != nil {
		t.Errorf("FromContext outside fn = %v, %v; want nil, false", l, ok)
	}
	//lint:ignore SA1012 FromContext accepts a nil ctx, and this checks that it does.
	if l, ok := FromContext(nil); ok || l != nil {
		t.Errorf("FromContext(nil) = %v, %v; want nil, false", l, ok)
	}
}

// fn's context is the engine's with the lock added: a context derived from
// it still finds the lock and still sees the engine cancel it, with its
// cause.
func TestFnContextKeepsTheEngineCancellation(t *testing.T) {
	m := New(memory.New())
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- m.Try(context.Background(), "k", time.Minute, func(ctx context.Context) error {
			inner, cancel := context.WithCancel(ctx)
			defer cancel()
			if l, ok := FromContext(inner); !ok || l.Key() != "k" {
				t.Errorf("FromContext on a derived context = %v, %v", l, ok)
			}
			close(started)
			<-inner.Done()
			if cause := context.Cause(inner); !errors.Is(cause, ErrClosed) {
				t.Errorf("cause of fn's cancellation = %v; want ErrClosed", cause)
			}
			return nil
		})
	}()
	<-started
	if err := m.Close(); err != nil {
		t.Errorf("Close = %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("Try interrupted by Close = %v; want an error matching ErrClosed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Try did not return after Close cancelled fn")
	}
}

func TestTryAndBlockReportContentionWithTypedErrors(t *testing.T) {
	m := New(memory.New())
	defer m.Close()
	held := m.Make("busy", time.Minute)
	if ok, err := held.Acquire(t.Context()); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	fn := func(context.Context) error { t.Error("fn ran while the key was held"); return nil }

	err := m.Try(t.Context(), "busy", time.Minute, fn)
	var na *NotAcquiredError
	if !errors.As(err, &na) || na.Key != "busy" || !errors.Is(err, ErrNotAcquired) || CodeOf(err) != CodeNotAcquired || na.HTTPStatus() != 409 {
		t.Errorf("Try on a held key = %v; want a *NotAcquiredError for busy, code NotAcquired, 409", err)
	}
	err = m.Block(t.Context(), "busy", time.Minute, fn, WithTimeout(10*time.Millisecond), WithRetryDelay(time.Millisecond))
	if !errors.As(err, &na) || na.Waited <= 0 {
		t.Errorf("Block on a held key = %v; want a *NotAcquiredError that says how long it waited", err)
	}
	if err := held.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}
}

func TestNilFnAndBadInputAreInvalidArguments(t *testing.T) {
	m := New(memory.New())
	defer m.Close()
	for name, err := range map[string]error{
		"nil fn":    m.Try(t.Context(), "k", time.Minute, nil),
		"empty key": m.Block(t.Context(), "", time.Minute, func(context.Context) error { return nil }),
		"tiny ttl":  m.Make("k", time.Microsecond).Block(t.Context()),
	} {
		var ia *InvalidArgumentError
		if !errors.As(err, &ia) || !errors.Is(err, ErrInvalidArgument) || CodeOf(err) != CodeInvalidArgument {
			t.Errorf("%s: %v; want an *InvalidArgumentError", name, err)
		}
	}
}

// A nil or zero Manager or ManagedLock answers with an error, never a
// panic.
func TestZeroValuesAnswerWithErrors(t *testing.T) {
	var nilManager *Manager
	for name, m := range map[string]*Manager{"nil": nilManager, "zero": {}} {
		fn := func(context.Context) error { return nil }
		errs := []error{
			m.Try(t.Context(), "k", time.Minute, fn),
			m.Block(t.Context(), "k", time.Minute, fn),
			m.Close(),
		}
		l := m.Make("k", time.Minute)
		ok, err := l.Acquire(t.Context())
		errs = append(errs, err, l.Release(t.Context()))
		for _, err := range errs {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Errorf("%s Manager: %v; want an error matching ErrInvalidArgument", name, err)
			}
		}
		if ok || l.IsAcquired() || l.Key() != "" || l.Token() != 0 || !l.ExpiresAt().IsZero() {
			t.Errorf("%s Manager: its lock claims to be held or to know things", name)
		}
	}
}

func TestOptionsFillTheEngineOptions(t *testing.T) {
	cases := []struct {
		opts []Option
		want options
	}{
		{nil, options{}},
		{[]Option{{}}, options{}},
		{[]Option{WithTimeout(0)}, options{TimeoutSet: true}},
		{[]Option{WithTimeout(time.Second), WithRetryDelay(time.Millisecond)}, options{Timeout: time.Second, TimeoutSet: true, RetryDelay: time.Millisecond}},
		{[]Option{WithRefresh()}, options{Refresh: true}},
		{[]Option{WithRefreshEvery(time.Second)}, options{Refresh: true, RefreshEvery: time.Second}},
		{[]Option{WithRetryDelay(time.Second), WithRetryDelay(time.Millisecond)}, options{RetryDelay: time.Millisecond}},
	}
	for _, c := range cases {
		if got := newOptions(c.opts); got != c.want {
			t.Errorf("newOptions(%v) = %+v, want %+v", c.opts, got, c.want)
		}
	}
	if got := newManagerOptions(nil).prefix; got != "zerotal_lock:" {
		t.Errorf("default prefix = %q", got)
	}
	if got := newManagerOptions([]ManagerOption{WithPrefix("")}).prefix; got != "" {
		t.Errorf("WithPrefix(\"\") gives prefix %q, want none", got)
	}
}

func TestConfigFromEnv(t *testing.T) {
	for _, v := range []string{"LOCK_DRIVER", "LOCK_PREFIX", "LOCK_SQLITE_PATH", "REDIS_URL", "LOCK_FILE_DIR"} {
		t.Setenv(v, "")
	}
	want := Config{Driver: "memory", Prefix: "zerotal_lock:", SQLite: SQLiteConfig{Path: ":memory:"}}
	if got := ConfigFromEnv(); got != want {
		t.Errorf("ConfigFromEnv() with nothing set = %+v, want the defaults %+v", got, want)
	}
	t.Setenv("LOCK_DRIVER", "file")
	t.Setenv("LOCK_PREFIX", "app:")
	t.Setenv("LOCK_SQLITE_PATH", "/var/lib/locks.db")
	t.Setenv("REDIS_URL", "redis://cache:6379/2")
	t.Setenv("LOCK_FILE_DIR", "/run/locks")
	want = Config{Driver: "file", Prefix: "app:", SQLite: SQLiteConfig{"/var/lib/locks.db"}, Redis: RedisConfig{"redis://cache:6379/2"}, File: FileConfig{"/run/locks"}}
	if got := ConfigFromEnv(); got != want {
		t.Errorf("ConfigFromEnv() = %+v, want %+v", got, want)
	}
}

func TestOpenRejectsAnUnregisteredDriverSayingWhatToImport(t *testing.T) {
	for _, c := range []struct {
		cfg            Config
		field, import_ string
	}{
		{Config{Driver: "etcd"}, "Config.Driver", "drivers/etcd"},
		{Config{Driver: "sqlite"}, "Config.Driver", "drivers/sqlite"},
		{Config{URL: "redis://h:1/0"}, "Config.URL", "drivers/redis"},
		{Config{URL: "carrier-pigeon://loft"}, "Config.URL", "import the package"},
	} {
		m, err := Open(c.cfg)
		var ia *InvalidArgumentError
		if m != nil || !errors.As(err, &ia) || ia.Field != c.field {
			t.Fatalf("Open(%+v) = %v, %v; want an *InvalidArgumentError on %s", c.cfg, m, err, c.field)
		}
		if !strings.Contains(err.Error(), "memory") || !strings.Contains(err.Error(), c.import_) {
			t.Errorf("Open(%+v) error %q names neither the registered drivers nor %q", c.cfg, err, c.import_)
		}
	}
	for _, c := range []Config{{Driver: "file"}, {Driver: "redis"}, {URL: "no scheme"}, {URL: "memory:?x=1"}} {
		t.Setenv("REDIS_URL", "")
		if _, err := Open(c); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("Open(%+v) = %v; want an error matching ErrInvalidArgument", c, err)
		}
	}
}

func TestOpenByURLWinsOverTheDriverName(t *testing.T) {
	for _, cfg := range []Config{{URL: "memory:"}, {URL: "MEMORY:", Driver: "sqlite"}, {Driver: "memory"}, {}} {
		cfg.Prefix = testPrefix(t)
		m, err := Open(cfg)
		if err != nil {
			t.Fatalf("Open(%+v) = %v", cfg, err)
		}
		if err := m.Try(t.Context(), "job", time.Minute, func(context.Context) error { return nil }); err != nil {
			t.Errorf("Try = %v", err)
		}
		if err := m.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	}
}

func TestDefaultOpensFromTheEnvironmentAndSetDefaultReplacesIt(t *testing.T) {
	defer SetDefault(nil)
	t.Setenv("LOCK_DRIVER", "bogus")
	SetDefault(nil)
	err := Try(t.Context(), "k", time.Minute, func(context.Context) error { return nil })
	if !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Try on a Default opened from LOCK_DRIVER=bogus = %v; want the open error", err)
	}
	if first := Default(); Default() != first {
		t.Error("Default() returns a different Manager on each call")
	}

	mine := New(memory.New())
	defer mine.Close()
	SetDefault(mine)
	if Default() != mine {
		t.Fatal("Default() is not the Manager given to SetDefault")
	}
	if err := Block(t.Context(), "k", time.Minute, func(context.Context) error { return nil }); err != nil {
		t.Errorf("Block on Default = %v", err)
	}
	if l := Make("k", time.Minute); l.Key() != "k" {
		t.Errorf("Make on Default gave a lock on %q", l.Key())
	}
}

func BenchmarkTryUncontended(b *testing.B) {
	m := New(memory.New())
	defer m.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := m.Try(ctx, "bench", time.Minute, fn); err != nil {
			b.Fatal(err)
		}
	}
}
