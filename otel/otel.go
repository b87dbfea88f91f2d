// Package lockotel records what zerotal lock's locks do as OpenTelemetry
// metrics and spans, through the official API (go.opentelemetry.io/otel):
//
//	obs, err := lockotel.New() // the global MeterProvider and TracerProvider
//	if err != nil { ... }
//	m, err := lock.OpenWith(lock.Config{URL: url}, lock.WithObserver(obs))
//
// It is a module of its own, so that programs that do not import it link no
// OpenTelemetry. docs/observability.md lists the metrics, spans and
// attributes, with a dashboard query and what to alert on.
//
// Keys can carry personal data ("invoice:<customer>"), and one attribute
// value per key would make every metric a series per key: no attribute
// carries the key unless WithKeyAttribute or WithKeyName asks for it.
package lockotel

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	lock "github.com/zerotal/lock/sdk/go"
)

// ScopeName is the instrumentation scope of the meter and the tracer.
const ScopeName = "github.com/zerotal/lock/otel"

// The attribute keys.
const (
	AttrDriver       = attribute.Key("lock.driver")            // the driver's name: "redis", "memory"
	AttrOperation    = attribute.Key("lock.operation")         // the call: "try", "block", "acquire", "acquire_wait", "refresh", "release", "force_release"
	AttrOutcome      = attribute.Key("lock.outcome")           // an acquisition's outcome: "acquired", "not_acquired", "timed_out", "canceled", "closed", "error"
	AttrWake         = attribute.Key("lock.wait.wake")         // how a wait ended: "queue", "notice", "poll"
	AttrWaitDuration = attribute.Key("lock.wait.duration")     // span: how long the acquisition waited, in seconds
	AttrToken        = attribute.Key("lock.fencing_token")     // span: the acquisition's fencing token
	AttrLostReason   = attribute.Key("lock.lost.reason")       // "expired", "taken_over", "gone", "unreachable", "released", "closed"
	AttrRefresh      = attribute.Key("lock.refresh.outcome")   // "ok", "failed", "lost"
	AttrBackendOp    = attribute.Key("lock.backend.operation") // the failed driver call: "acquire", "release", "refresh", ...
	AttrKey          = attribute.Key("lock.key")               // the key, or what WithKeyName maps it to; only when asked for
)

// Option configures New.
type Option func(*config)

type config struct {
	mp      metric.MeterProvider
	tp      trace.TracerProvider
	keyName func(string) string
}

// WithMeterProvider records metrics through mp instead of the global
// MeterProvider.
func WithMeterProvider(mp metric.MeterProvider) Option { return func(c *config) { c.mp = mp } }

// WithTracerProvider records spans through tp instead of the global
// TracerProvider.
func WithTracerProvider(tp trace.TracerProvider) Option { return func(c *config) { c.tp = tp } }

// WithKeyAttribute puts the key itself in a lock.key attribute of every
// metric and span. Only for keys that carry no personal data and are few:
// each key becomes a series of every metric.
func WithKeyAttribute() Option {
	return func(c *config) { c.keyName = func(k string) string { return k } }
}

// WithKeyName puts name(key) in a lock.key attribute of every metric and
// span: map keys to a few low-cardinality names ("invoice:7" to "invoice").
func WithKeyName(name func(key string) string) Option { return func(c *config) { c.keyName = name } }

// durationBuckets are the histograms' bucket boundaries, in seconds: from
// an in-process hand-off (tens of microseconds) to a long job's hold.
var durationBuckets = []float64{0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600}

// observer holds the instruments.
type observer struct {
	cfg                                          config
	tracer                                       trace.Tracer
	acquisitions, lost, refreshes, backendErrors metric.Int64Counter
	waitDuration, holdDuration                   metric.Float64Histogram
	holders, waiters                             metric.Int64UpDownCounter
}

// New returns a lock.Observer that records metrics and spans. It fails only
// when an instrument cannot be created.
func New(opts ...Option) (lock.Observer, error) {
	o := &observer{cfg: config{mp: otel.GetMeterProvider(), tp: otel.GetTracerProvider()}}
	for _, opt := range opts {
		opt(&o.cfg)
	}
	meter := o.cfg.mp.Meter(ScopeName)
	o.tracer = o.cfg.tp.Tracer(ScopeName)
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	upDown := func(name, unit, desc string) metric.Int64UpDownCounter {
		c, err := meter.Int64UpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string) metric.Float64Histogram {
		h, err := meter.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(durationBuckets...))
		errs = append(errs, err)
		return h
	}
	o.acquisitions = counter("lock.acquisitions", "{acquisition}", "Acquisitions by Try, Block, Acquire and ManagedLock.Block, by outcome.")
	o.lost = counter("lock.lost", "{lock}", "Locks lost while held, by reason.")
	o.refreshes = counter("lock.refreshes", "{refresh}", "Refreshes of held locks, by outcome.")
	o.backendErrors = counter("lock.backend.errors", "{error}", "Failed driver calls, by operation.")
	o.waitDuration = histogram("lock.wait.duration", "How long acquisitions waited for a held key.")
	o.holdDuration = histogram("lock.hold.duration", "How long locks were held, from acquire to release.")
	o.holders = upDown("lock.holders", "{holder}", "Locks held now.")
	o.waiters = upDown("lock.waiters", "{waiter}", "Acquisitions waiting for a key now.")
	if err := errors.Join(errs...); err != nil {
		return lock.Observer{}, err
	}
	return lock.Observer{
		Start: o.start, End: o.end, Waiting: o.waiting, Acquire: o.acquire,
		Refresh: o.refresh, Lost: o.lostLock, Release: o.release, BackendError: o.backendError,
	}, nil
}

// attrs is the attribute set of an event on key with driver, plus more.
func (o *observer) attrs(driver, key string, more ...attribute.KeyValue) metric.MeasurementOption {
	kv := append(make([]attribute.KeyValue, 0, len(more)+2), AttrDriver.String(driver))
	if o.cfg.keyName != nil {
		kv = append(kv, AttrKey.String(o.cfg.keyName(key)))
	}
	return metric.WithAttributes(append(kv, more...)...)
}

func (o *observer) start(ctx context.Context, c lock.Call) context.Context {
	kv := []attribute.KeyValue{AttrDriver.String(c.Driver), AttrOperation.String(c.Op.String())}
	if o.cfg.keyName != nil {
		kv = append(kv, AttrKey.String(o.cfg.keyName(c.Key)))
	}
	ctx, _ = o.tracer.Start(ctx, "lock."+c.Op.String(), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(kv...))
	return ctx
}

func (o *observer) end(ctx context.Context, c lock.Call, err error) {
	span := trace.SpanFromContext(ctx)
	if err != nil {
		span.RecordError(err)
		if !errors.Is(err, lock.ErrNotAcquired) { // contention is an outcome, not a failure
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

func (o *observer) waiting(ctx context.Context, c lock.Call) {
	o.waiters.Add(ctx, 1, o.attrs(c.Driver, c.Key))
}

func (o *observer) acquire(ctx context.Context, e lock.AcquireEvent) {
	outcome := AttrOutcome.String(e.Outcome.String())
	o.acquisitions.Add(ctx, 1, o.attrs(e.Driver, e.Key, AttrOperation.String(e.Op.String()), outcome))
	span := trace.SpanFromContext(ctx)
	span.SetAttributes(outcome)
	if e.Wake != lock.WakeNone {
		o.waiters.Add(ctx, -1, o.attrs(e.Driver, e.Key))
		o.waitDuration.Record(ctx, e.Waited.Seconds(), o.attrs(e.Driver, e.Key, AttrOperation.String(e.Op.String()), outcome, AttrWake.String(e.Wake.String())))
		span.SetAttributes(AttrWaitDuration.Float64(e.Waited.Seconds()), AttrWake.String(e.Wake.String()))
	}
	if e.Outcome == lock.OutcomeAcquired {
		o.holders.Add(ctx, 1, o.attrs(e.Driver, e.Key))
		span.SetAttributes(AttrToken.Int64(int64(e.Token)))
	}
}

func (o *observer) refresh(ctx context.Context, e lock.RefreshEvent) {
	o.refreshes.Add(ctx, 1, o.attrs(e.Driver, e.Key, AttrRefresh.String(e.Outcome.String())))
	if e.Outcome == lock.RefreshFailed {
		trace.SpanFromContext(ctx).AddEvent("lock.refresh.failed", trace.WithAttributes(attribute.String("error", e.Err.Error())))
	}
}

func (o *observer) lostLock(ctx context.Context, e lock.LostEvent) {
	reason := AttrLostReason.String(e.Err.Reason.Name())
	o.lost.Add(ctx, 1, o.attrs(e.Driver, e.Key, reason))
	trace.SpanFromContext(ctx).AddEvent("lock.lost", trace.WithAttributes(reason, AttrToken.Int64(int64(e.Token))))
}

func (o *observer) release(ctx context.Context, e lock.ReleaseEvent) {
	o.holders.Add(ctx, -1, o.attrs(e.Driver, e.Key))
	o.holdDuration.Record(ctx, e.Held.Seconds(), o.attrs(e.Driver, e.Key))
}

func (o *observer) backendError(ctx context.Context, e lock.BackendErrorEvent) {
	op := AttrBackendOp.String(e.Op)
	o.backendErrors.Add(ctx, 1, o.attrs(e.Driver, e.Key, op))
	trace.SpanFromContext(ctx).AddEvent("lock.backend.error", trace.WithAttributes(op, attribute.String("error", e.Err.Error())))
}
