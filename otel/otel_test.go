package lockotel_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/zerotal/lock/drivers/memory"
	lockotel "github.com/zerotal/lock/otel"
	lock "github.com/zerotal/lock/sdk/go"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// telemetry is the OTel SDK with in-memory readers: what the adapter
// recorded, as an exporter would get it.
type telemetry struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	opts   []lockotel.Option
}

func newTelemetry(opts ...lockotel.Option) *telemetry {
	t := &telemetry{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	t.opts = append([]lockotel.Option{
		lockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(t.reader))),
		lockotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(t.spans))),
	}, opts...)
	return t
}

func (tm *telemetry) manager(t *testing.T, d *memory.Driver) *lock.Manager {
	t.Helper()
	obs, err := lockotel.New(tm.opts...)
	if err != nil {
		t.Fatal(err)
	}
	m := lock.New(d, lock.WithObserver(obs))
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// metrics collects the metrics by name.
func (tm *telemetry) metrics(t *testing.T) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tm.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != lockotel.ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// sum returns the value of an int64 sum's point whose attributes include
// want, and every point's attributes.
func sum(t *testing.T, m metricdata.Metrics, want ...attribute.KeyValue) (int64, []attribute.Set) {
	t.Helper()
	s, ok := m.Data.(metricdata.Sum[int64])
	if !ok {
		t.Fatalf("%s is a %T, want an int64 sum", m.Name, m.Data)
	}
	var total int64
	var sets []attribute.Set
	for _, p := range s.DataPoints {
		sets = append(sets, p.Attributes)
		if hasAll(p.Attributes, want) {
			total += p.Value
		}
	}
	return total, sets
}

func hasAll(set attribute.Set, want []attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := set.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

func histogramCount(t *testing.T, m metricdata.Metrics, want ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is a %T, want a float64 histogram", m.Name, m.Data)
	}
	var n uint64
	var total float64
	for _, p := range h.DataPoints {
		if hasAll(p.Attributes, want) {
			n += p.Count
			total += p.Sum
		}
	}
	return n, total
}

func TestMetricsAndSpansOfTryBlockAndALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tm := newTelemetry()
		table := memory.NewTable()
		m := tm.manager(t, table.Driver())
		ctx := context.Background()
		nop := func(context.Context) error { return nil }

		// A Try that holds for 2 s, while a Block waits for it.
		blocked := make(chan error, 1)
		// The Block gets the test's context, not the Try's: the Try's is
		// cancelled when its function returns, which may come before the
		// hand-off reaches the Block.
		if err := m.Try(ctx, "invoice:7", time.Minute, func(context.Context) error {
			go func() { blocked <- m.Block(ctx, "invoice:7", time.Minute, nop) }()
			time.Sleep(2 * time.Second)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := <-blocked; err != nil {
			t.Fatal(err)
		}
		// A Try on a busy key, and one whose lock is lost to a force release.
		holder := m.Make("invoice:7", time.Hour)
		_, _ = holder.Acquire(ctx)
		_ = m.Try(ctx, "invoice:7", time.Minute, nop)
		_ = holder.Release(ctx)
		admin := lock.New(table.Driver())
		defer admin.Close()
		err := m.Try(ctx, "invoice:7", 30*time.Second, func(ctx context.Context) error {
			_ = admin.Make("invoice:7", time.Second).ForceRelease(ctx)
			<-ctx.Done()
			return nil
		}, lock.WithRefreshEvery(10*time.Second))
		if !errors.Is(err, lock.ErrLost) {
			t.Fatalf("Try = %v, want ErrLost", err)
		}

		ms := tm.metrics(t)
		mem := lockotel.AttrDriver.String("memory")
		if n, _ := sum(t, ms["lock.acquisitions"], mem, lockotel.AttrOutcome.String("acquired")); n != 4 {
			t.Errorf("acquired: %d, want 4 (Try, Block, Acquire, Try)", n)
		}
		if n, _ := sum(t, ms["lock.acquisitions"], lockotel.AttrOperation.String("try"), lockotel.AttrOutcome.String("not_acquired")); n != 1 {
			t.Errorf("not acquired: %d, want 1", n)
		}
		if n, total := histogramCount(t, ms["lock.wait.duration"], lockotel.AttrWake.String("queue"), lockotel.AttrOutcome.String("acquired")); n != 1 || total != 2 {
			t.Errorf("waits: %d totalling %vs, want one of 2s", n, total)
		}
		if n, _ := histogramCount(t, ms["lock.hold.duration"], mem); n != 4 {
			t.Errorf("holds: %d, want 4", n)
		}
		if n, _ := sum(t, ms["lock.lost"], lockotel.AttrLostReason.String("gone")); n != 1 {
			t.Errorf("lost (gone): %d, want 1", n)
		}
		if n, _ := sum(t, ms["lock.refreshes"], lockotel.AttrRefresh.String("lost")); n != 1 {
			t.Errorf("refreshes found lost: %d, want 1", n)
		}
		if n, _ := sum(t, ms["lock.holders"]); n != 0 {
			t.Errorf("holders now: %d, want 0", n)
		}
		if n, _ := sum(t, ms["lock.waiters"]); n != 0 {
			t.Errorf("waiters now: %d, want 0", n)
		}
		for name, metric := range ms {
			if s, ok := metric.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					if _, has := p.Attributes.Value(lockotel.AttrKey); has {
						t.Errorf("%s has the key as an attribute by default", name)
					}
				}
			}
		}

		spans := map[string]int{}
		for _, s := range tm.spans.Ended() {
			spans[s.Name()]++
			for _, kv := range s.Attributes() {
				if kv.Key == lockotel.AttrKey {
					t.Errorf("span %s has the key as an attribute by default", s.Name())
				}
			}
			if s.Name() == "lock.block" {
				attrs := attribute.NewSet(s.Attributes()...)
				if v, _ := attrs.Value(lockotel.AttrWaitDuration); v.AsFloat64() != 2 {
					t.Errorf("lock.block's wait: %v, want 2", v.AsFloat64())
				}
				if v, _ := attrs.Value(lockotel.AttrToken); v.AsInt64() != 2 {
					t.Errorf("lock.block's token: %v, want 2", v.AsInt64())
				}
			}
			if s.Name() == "lock.try" && s.Status().Code == codes.Error {
				var lostEvent bool
				for _, e := range s.Events() {
					lostEvent = lostEvent || e.Name == "lock.lost"
				}
				if !lostEvent {
					t.Errorf("the failed lock.try span has no lock.lost event: %+v", s.Events())
				}
			}
		}
		if spans["lock.try"] != 3 || spans["lock.block"] != 1 || spans["lock.acquire"] != 1 || spans["lock.release"] != 1 {
			t.Errorf("spans: %v", spans)
		}
	})
}

func TestKeysAreAttributesOnlyWhenAskedFor(t *testing.T) {
	for _, c := range []struct {
		opt  lockotel.Option
		want string
	}{
		{lockotel.WithKeyAttribute(), "invoice:7"},
		{lockotel.WithKeyName(func(k string) string { return strings.SplitN(k, ":", 2)[0] }), "invoice"},
	} {
		tm := newTelemetry(c.opt)
		m := tm.manager(t, memory.New())
		_ = m.Try(context.Background(), "invoice:7", time.Minute, func(context.Context) error { return nil })
		if n, _ := sum(t, tm.metrics(t)["lock.acquisitions"], lockotel.AttrKey.String(c.want)); n != 1 {
			t.Errorf("acquisitions with lock.key=%q: %d, want 1", c.want, n)
		}
		spans := tm.spans.Ended()
		if len(spans) != 1 || !hasAll(attribute.NewSet(spans[0].Attributes()...), []attribute.KeyValue{lockotel.AttrKey.String(c.want)}) {
			t.Errorf("span attributes: %v", spans[0].Attributes())
		}
	}
}

// A program that does not import this module links no OpenTelemetry, and
// one that does links it (so that the check can fail).
func TestProgramsWithoutThisModuleLinkNoOpenTelemetry(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two programs")
	}
	dir := t.TempDir()
	check := func(pkg string, wantOTel bool) {
		bin := filepath.Join(dir, filepath.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		out, err := exec.Command("go", "version", "-m", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go version -m: %v\n%s", err, out)
		}
		if got := strings.Contains(string(out), "go.opentelemetry.io"); got != wantOTel {
			t.Errorf("%s links OpenTelemetry: %v, want %v\n%s", pkg, got, wantOTel, out)
		}
	}
	check("./internal/nootel", false)
	check("./internal/withotel", true)
	_ = os.Remove(dir)
}
