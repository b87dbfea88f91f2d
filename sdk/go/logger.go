package lock

import (
	"context"
	"log/slog"
)

// The attribute keys of what WithLogger logs, the same names package otel
// gives its attributes.
const (
	logKey     = "lock.key"
	logDriver  = "lock.driver"
	logToken   = "lock.fencing_token"
	logReason  = "lock.lost.reason"
	logHeld    = "lock.held"
	logOp      = "lock.backend.operation"
	logErr     = "error"
	logSince   = "lock.failing_since"
	logNewHold = "lock.new_holder_token"
)

// logObserver is the Observer of WithLogger: a lost lock at Error, a failed
// refresh (the first of a streak; its retries at Debug) and a backend
// failure at Warn, with structured fields. The key is
// one of them: a handler that must not see it can drop "lock.key" with
// slog.HandlerOptions.ReplaceAttr.
func logObserver(log *slog.Logger) Observer {
	return Observer{
		Lost: func(ctx context.Context, e LostEvent) {
			attrs := []slog.Attr{
				slog.String(logKey, e.Key), slog.String(logDriver, e.Driver),
				slog.String(logReason, e.Err.Reason.Name()),
				slog.Uint64(logToken, e.Token), slog.Duration(logHeld, e.Held),
			}
			if e.Err.Token != 0 {
				attrs = append(attrs, slog.Uint64(logNewHold, e.Err.Token))
			}
			if !e.Err.Since.IsZero() {
				attrs = append(attrs, slog.Time(logSince, e.Err.Since))
			}
			if e.Err.Cause != nil {
				attrs = append(attrs, slog.String(logErr, e.Err.Cause.Error()))
			}
			log.LogAttrs(ctx, slog.LevelError, "lock lost", attrs...)
		},
		Refresh: func(ctx context.Context, e RefreshEvent) {
			if e.Outcome != RefreshFailed {
				return
			}
			level := slog.LevelWarn
			if e.Retry {
				level = slog.LevelDebug // the first failure of a streak said it; the loss will say the rest
			}
			log.LogAttrs(ctx, level, "lock refresh failed",
				slog.String(logKey, e.Key), slog.String(logDriver, e.Driver),
				slog.Uint64(logToken, e.Token), slog.String(logErr, e.Err.Error()))
		},
		BackendError: func(ctx context.Context, e BackendErrorEvent) {
			if e.Op == "refresh" {
				return // logged as a failed refresh
			}
			log.LogAttrs(ctx, slog.LevelWarn, "lock backend error",
				slog.String(logKey, e.Key), slog.String(logDriver, e.Driver),
				slog.String(logOp, e.Op), slog.String(logErr, e.Err.Error()))
		},
	}
}
