package redis

import (
	"context"
	"net"
	"sync/atomic"

	goredis "github.com/redis/go-redis/v9"
)

// dialWatch remembers whether the last attempt to connect to the server
// failed, and why. go-redis retries a refused dial, and then the command,
// until the call's context ends, and then reports only the context's error:
// without this, a server that is down would read as a caller whose deadline
// passed, and a wait on it as contention. It is installed as a hook on the
// clients Open makes (a client given to New is left as its owner set it).
type dialWatch struct {
	last atomic.Pointer[error] // the last dial's error; nil after a dial succeeded
}

// unreachable returns the error of the last dial if it failed.
func (w *dialWatch) unreachable() error {
	if p := w.last.Load(); p != nil {
		return *p
	}
	return nil
}

// DialHook records the outcome of every dial.
func (w *dialWatch) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			w.last.Store(&err)
		} else if w.last.Load() != nil {
			w.last.Store(nil)
		}
		return conn, err
	}
}

// ProcessHook passes commands through.
func (*dialWatch) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }

// ProcessPipelineHook passes pipelines through.
func (*dialWatch) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return next
}
