package lock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/zerotal/lock/driver"
	"github.com/zerotal/lock/drivers/memory"
)

// recorder is an Observer that writes every event as one line, so that a
// test can compare what the engine reported with what happened.
type recorder struct {
	mu     sync.Mutex
	events []string
}

// ctxMark is put into the context by Start, so that a test sees which
// events got the call's context.
type ctxMark struct{}

func (r *recorder) add(ctx context.Context, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if ctx.Value(ctxMark{}) == nil {
		line += " (no call ctx)"
	}
	r.mu.Lock()
	r.events = append(r.events, line)
	r.mu.Unlock()
}

func (r *recorder) lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

func (r *recorder) observer() Observer {
	return Observer{
		Start: func(ctx context.Context, c Call) context.Context {
			ctx = context.WithValue(ctx, ctxMark{}, c.Op)
			r.add(ctx, "start %s %s %s", c.Op, c.Key, c.Driver)
			return ctx
		},
		End: func(ctx context.Context, c Call, err error) {
			r.add(ctx, "end %s %s: %v", c.Op, c.Key, err)
		},
		Waiting: func(ctx context.Context, c Call) { r.add(ctx, "waiting %s %s", c.Op, c.Key) },
		Acquire: func(ctx context.Context, e AcquireEvent) {
			r.add(ctx, "acquire %s %s %s token=%d wake=%s waited=%v err=%v", e.Op, e.Key, e.Outcome, e.Token, e.Wake, e.Waited, e.Err)
		},
		Refresh: func(ctx context.Context, e RefreshEvent) {
			r.add(ctx, "refresh %s %s token=%d err=%v", e.Key, e.Outcome, e.Token, e.Err)
		},
		Lost: func(ctx context.Context, e LostEvent) {
			r.add(ctx, "lost %s %s token=%d held=%v", e.Key, e.Err.Reason.Name(), e.Token, e.Held)
		},
		Release: func(ctx context.Context, e ReleaseEvent) {
			r.add(ctx, "release %s token=%d held=%v released=%v err=%v", e.Key, e.Token, e.Held, e.Released, e.Err)
		},
		BackendError: func(ctx context.Context, e BackendErrorEvent) {
			r.add(ctx, "backend error %s %s: %v", e.Op, e.Key, e.Err)
		},
	}
}

// observed returns a manager on d that reports to a new recorder.
func observed(t *testing.T, d driver.Driver, opts ...ManagerOption) (*Manager, *recorder) {
	t.Helper()
	r := &recorder{}
	m := New(d, append([]ManagerOption{WithPrefix(""), WithObserver(r.observer())}, opts...)...)
	t.Cleanup(func() { _ = m.Close() })
	return m, r
}

func checkEvents(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	if got := r.lines(); !slices.Equal(got, want) {
		t.Errorf("events:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestObserverSeesATryFromStartToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := observed(t, memory.New())
		err := m.Try(context.Background(), "k", time.Minute, func(ctx context.Context) error {
			if ctx.Value(ctxMark{}) == nil {
				t.Error("fn's context does not derive from the one Start returned")
			}
			time.Sleep(2 * time.Second)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		checkEvents(t, r,
			"start try k memory",
			"acquire try k acquired token=1 wake=none waited=0s err=<nil>",
			"release k token=1 held=2s released=true err=<nil>",
			"end try k: <nil>")
	})
}

func TestObserverSeesContentionTimeoutsAndCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := observed(t, memory.New())
		ctx := context.Background()
		holder := m.Make("k", time.Hour)
		if ok, err := holder.Acquire(ctx); !ok || err != nil {
			t.Fatal(ok, err)
		}
		_ = m.Try(ctx, "k", time.Minute, func(context.Context) error { return nil })
		_ = m.Block(ctx, "k", time.Minute, func(context.Context) error { return nil }, WithTimeout(3*time.Second))
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_ = m.Block(cctx, "k", time.Minute, func(context.Context) error { return nil })
		checkEvents(t, r,
			"start acquire k memory",
			"acquire acquire k acquired token=1 wake=none waited=0s err=<nil>",
			"end acquire k: <nil>",
			"start try k memory",
			"acquire try k not_acquired token=0 wake=none waited=0s err=<nil>",
			`end try k: lock: "k" not acquired`,
			"start block k memory",
			"waiting block k",
			`acquire block k timed_out token=0 wake=queue waited=3s err=lock: "k" not acquired after waiting 3s`,
			`end block k: lock: "k" not acquired after waiting 3s`,
			"start block k memory",
			"waiting block k",
			"acquire block k canceled token=0 wake=queue waited=1s err=context deadline exceeded",
			"end block k: context deadline exceeded")
	})
}

func TestObserverSeesHandOffsNoticesAndPolls(t *testing.T) {
	cases := []struct {
		name string
		d    func() driver.Driver // made inside the bubble, whose clock it reads
		wake string
	}{
		{"queue", func() driver.Driver { return memory.New() }, "queue"},
		{"notice", func() driver.Driver { return newFake() }, "notice"},
		{"poll", func() driver.Driver { return noNotices{newFake()} }, "poll"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, r := observed(t, c.d())
				ctx := context.Background()
				holder := m.Make("k", time.Hour)
				if ok, err := holder.Acquire(ctx); !ok || err != nil {
					t.Fatal(ok, err)
				}
				go func() {
					time.Sleep(250 * time.Millisecond)
					_ = holder.Release(ctx)
				}()
				waiter := m.Make("k", time.Hour)
				if err := waiter.Block(ctx, WithRetryDelay(time.Second)); err != nil {
					t.Fatal(err)
				}
				waited := "250ms"
				if c.wake == "poll" {
					waited = "1s" // the release is seen at the next retry
				}
				got := r.lines()
				want := fmt.Sprintf("acquire acquire_wait k acquired token=2 wake=%s waited=%s err=<nil>", c.wake, waited)
				if !slices.Contains(got, want) || !slices.Contains(got, "waiting acquire_wait k") {
					t.Errorf("events:\n\t%s\nwant among them %q", strings.Join(got, "\n\t"), want)
				}
			})
		})
	}
}

// noNotices hides the fake's Notifier, so that Block polls: its own
// Subscribe, of another signature, shadows the fake's.
type noNotices struct{ *fakeDriver }

func (noNotices) Subscribe() {}

func TestObserverSeesARefreshThatFindsTheLockGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		table := memory.NewTable()
		m, r := observed(t, table.Driver())
		admin := New(table.Driver(), WithPrefix(""))
		defer admin.Close()
		ctx := context.Background()
		err := m.Try(ctx, "k", 30*time.Second, func(ctx context.Context) error {
			time.Sleep(25 * time.Second)
			if err := admin.Make("k", time.Second).ForceRelease(ctx); err != nil {
				t.Error(err)
			}
			<-ctx.Done() // the next refresh, at 30 s, finds it gone
			return nil
		}, WithRefresh())
		var lost *LostError
		if !errors.As(err, &lost) || lost.Reason != LostGone {
			t.Fatalf("Try = %v, want a LostError (gone)", err)
		}
		checkEvents(t, r,
			"start try k memory",
			"acquire try k acquired token=1 wake=none waited=0s err=<nil>",
			"refresh k ok token=1 err=<nil>",
			"refresh k ok token=1 err=<nil>",
			"refresh k lost token=1 err=<nil>",
			"lost k gone token=1 held=30s",
			"release k token=1 held=30s released=false err=<nil>",
			"end try k: "+err.Error())
	})
}

func TestObserverIsToldOfAnExpiryWhileTheWorkStillRuns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, r := observed(t, memory.New())
		err := m.Try(context.Background(), "k", 10*time.Second, func(ctx context.Context) error {
			<-ctx.Done()
			synctest.Wait()
			if got := r.lines(); !slices.Contains(got, "lost k expired token=1 held=10s") {
				t.Errorf("the loss was not reported when it happened; events so far:\n\t%s", strings.Join(got, "\n\t"))
			}
			time.Sleep(5 * time.Second) // work that ignores its context
			return nil
		})
		if !errors.Is(err, ErrLost) {
			t.Fatalf("Try = %v, want ErrLost", err)
		}
		checkEvents(t, r,
			"start try k memory",
			"acquire try k acquired token=1 wake=none waited=0s err=<nil>",
			"lost k expired token=1 held=10s",
			"release k token=1 held=15s released=false err=<nil>",
			"end try k: "+err.Error())
	})
}

func TestObserverSeesFailingRefreshesAndBackendErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		m, r := observed(t, f)
		down := errors.New("connection refused")
		err := m.Try(context.Background(), "k", 30*time.Second, func(ctx context.Context) error {
			f.failAll.Store(&down)
			<-ctx.Done()
			return nil
		}, WithRefreshEvery(20*time.Second))
		var lost *LostError
		if !errors.As(err, &lost) || lost.Reason != LostUnreachable {
			t.Fatalf("Try = %v, want a LostError (unreachable)", err)
		}
		got := strings.Join(r.lines(), "\n")
		for _, want := range []string{
			"refresh k failed token=1 err=connection refused",
			"backend error refresh k: connection refused",
			"lost k unreachable token=1 held=30s",
			"backend error release k: connection refused",
			"release k token=1 held=30s released=false err=connection refused",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("no %q among the events:\n%s", want, got)
			}
		}
		if n := strings.Count(got, "lost k"); n != 1 {
			t.Errorf("the loss was reported %d times:\n%s", n, got)
		}
		if strings.Contains(got, "no call ctx") {
			t.Errorf("an event of the Try's work did not get the Try's context:\n%s", got)
		}
	})
}

func TestObserverSeesAnAcquireThatFails(t *testing.T) {
	f := newFake()
	m, r := observed(t, f)
	down := errors.New("connection refused")
	f.failAll.Store(&down)
	err := m.Try(context.Background(), "k", time.Minute, func(context.Context) error { return nil })
	checkEvents(t, r,
		"start try k lock",
		"backend error acquire k: connection refused",
		`acquire try k error token=0 wake=none waited=0s err=lock: acquire "k": connection refused`,
		"end try k: "+err.Error())
}

func TestObserverSeesCloseUnderRunningWork(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := &recorder{}
		m := New(memory.New(), WithObserver(r.observer()))
		started := make(chan struct{})
		done := make(chan error)
		go func() {
			done <- m.Try(context.Background(), "k", time.Minute, func(ctx context.Context) error {
				close(started)
				<-ctx.Done()
				return nil
			})
		}()
		<-started
		if err := m.Close(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Fatalf("Try = %v, want ErrClosed", err)
		}
		got := strings.Join(r.lines(), "\n")
		if strings.Count(got, "lost k closed token=1") != 1 || !strings.Contains(got, "release k token=1") {
			t.Errorf("events:\n%s", got)
		}
	})
}

func TestObserverEndSeesAPanic(t *testing.T) {
	m, r := observed(t, memory.New())
	func() {
		defer func() { _ = recover() }()
		_ = m.Try(context.Background(), "k", time.Minute, func(context.Context) error { panic("boom") })
	}()
	got := r.lines()
	if len(got) == 0 || got[len(got)-1] != "end try k: lock: fn panicked" {
		t.Errorf("events:\n\t%s", strings.Join(got, "\n\t"))
	}
}

func TestObserverSeesHandleCalls(t *testing.T) {
	m, r := observed(t, memory.New())
	ctx := context.Background()
	l := m.Make("k", time.Minute)
	_, _ = l.Acquire(ctx)
	_, _ = l.Acquire(ctx) // holds it: a refresh
	_, _ = l.Refresh(ctx)
	_ = l.Release(ctx)
	_ = l.ForceRelease(ctx)
	var lines []string
	for _, e := range r.lines() {
		lines = append(lines, e[:strings.Index(e+" token", " token")])
	}
	want := []string{
		"start acquire k memory", "acquire acquire k acquired", "end acquire k: <nil>",
		"start acquire k memory", "refresh k ok", "end acquire k: <nil>",
		"start refresh k memory", "refresh k ok", "end refresh k: <nil>",
		"start release k memory", "release k", "end release k: <nil>",
		"start force_release k memory", "end force_release k: <nil>",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("events:\n\t%s\nwant:\n\t%s", strings.Join(lines, "\n\t"), strings.Join(want, "\n\t"))
	}
}

func TestObserversJoinInOrder(t *testing.T) {
	var order []string
	obs := func(name string) Observer {
		return Observer{
			Start: func(ctx context.Context, c Call) context.Context {
				order = append(order, name+" start")
				return context.WithValue(ctx, ctxMark{}, name)
			},
			End: func(ctx context.Context, c Call, err error) {
				order = append(order, fmt.Sprint(name, " end ", ctx.Value(ctxMark{})))
			},
		}
	}
	m := New(memory.New(), WithObserver(obs("a")), WithObserver(Observer{}), WithObserver(obs("b")))
	defer m.Close()
	_ = m.Try(context.Background(), "k", time.Minute, func(context.Context) error { return nil })
	if want := []string{"a start", "b start", "a end b", "b end b"}; !slices.Equal(order, want) {
		t.Errorf("order %q, want %q", order, want)
	}
}

func TestOpenWithNamesTheDriverAndAppliesOptionsOverTheConfig(t *testing.T) {
	r := &recorder{}
	m, err := OpenWith(Config{Prefix: "cfg:"}, WithObserver(r.observer()), WithPrefix("opt:"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.prefix != "opt:" {
		t.Errorf("prefix %q, want the option's", m.prefix)
	}
	_ = m.Try(context.Background(), "k", time.Minute, func(context.Context) error { return nil })
	if got := r.lines(); len(got) == 0 || got[0] != "start try k memory" {
		t.Errorf("events: %q", got)
	}
	m2, err := OpenWith(Config{Prefix: "cfg:"})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if m2.prefix != "cfg:" || m2.obs != nil {
		t.Errorf("without options: prefix %q, observer %v", m2.prefix, m2.obs)
	}
	if got := driverName(newFake()); got != "lock" {
		t.Errorf("driverName of this package's fake = %q", got)
	}
}

// WithLogger logs a lost lock, a failed refresh and a backend failure with
// structured fields, and a manager without it logs nothing, not even to
// slog's default logger.
func TestLoggerLogsWhatGoesWrongAndNothingByDefault(t *testing.T) {
	var def bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&def, nil)))
	defer slog.SetDefault(prev)

	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		for _, logged := range []bool{false, true} {
			f := newFake()
			var opts []ManagerOption
			if logged {
				opts = append(opts, WithLogger(log))
			}
			m := New(f, opts...)
			down := errors.New("connection refused")
			_ = m.Try(context.Background(), "k", 30*time.Second, func(ctx context.Context) error {
				f.failAll.Store(&down)
				<-ctx.Done()
				return nil
			}, WithRefreshEvery(20*time.Second))
			_ = m.Close()
		}
		got := buf.String()
		for _, want := range []string{
			`level=WARN msg="lock refresh failed" lock.key=zerotal_lock:k`,
			`level=ERROR msg="lock lost" lock.key=k lock.driver=lock lock.lost.reason=unreachable lock.fencing_token=1 lock.held=30s lock.failing_since=`,
			`level=WARN msg="lock backend error" lock.key=k lock.driver=lock lock.backend.operation=release error="connection refused"`,
		} {
			if !strings.Contains(got, strings.Replace(want, "zerotal_lock:", "", 1)) {
				t.Errorf("the log lacks\n\t%s\nlog:\n%s", want, got)
			}
		}
		if strings.Count(got, "lock refresh failed") != 1 || strings.Contains(got, "backend.operation=refresh") {
			t.Errorf("a failed refresh must be logged once, as a failed refresh:\n%s", got)
		}
	})
	if def.Len() != 0 {
		t.Errorf("a manager logged to slog's default logger:\n%s", def.String())
	}
}

// A manager nobody observes pays nothing for the hook: a Try allocates what
// it did before the hook existed (8 allocations, docs/benchmarks.md).
func TestUnobservedTryAllocatesNoMore(t *testing.T) {
	m := New(memory.New())
	defer m.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	allocs := testing.AllocsPerRun(1000, func() {
		if err := m.Try(ctx, "k", time.Minute, fn); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 8 {
		t.Errorf("an unobserved Try allocates %v times, more than the 8 it did without the hook", allocs)
	}
}
