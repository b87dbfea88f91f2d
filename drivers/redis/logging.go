package redis

import (
	"context"
	"fmt"
	"log"
	"os"
	"sync"

	goredis "github.com/redis/go-redis/v9"
)

// go-redis has one logger per process, on which it reports every failed
// dial and every dropped connection, several lines a second while a server
// is down: "failed to dial after 5 attempts", four times per call. The
// driver's own errors already say what failed, to the caller, so Open
// silences that logger the first time it makes a client, unless the program
// has chosen with SetGoRedisLogging. A Driver made by New, on a client the
// program built, changes nothing.
var goRedisLogging struct {
	once   sync.Once
	chosen bool // SetGoRedisLogging was called: leave the logger alone
	mu     sync.Mutex
}

// SetGoRedisLogging turns go-redis's process-wide logging on (to stderr, as
// go-redis logs by default) or off, and keeps Open from silencing it. Call
// it before Open to keep go-redis's messages.
func SetGoRedisLogging(on bool) {
	goRedisLogging.mu.Lock()
	defer goRedisLogging.mu.Unlock()
	goRedisLogging.chosen = true
	if on {
		goredis.SetLogger(stderrLogger{log.New(stderr{}, "redis: ", log.LstdFlags|log.Lshortfile)})
	} else {
		goredis.SetLogger(quietLogger{})
	}
}

// quietGoRedis silences go-redis's logger once, unless the program chose.
func quietGoRedis() {
	goRedisLogging.once.Do(func() {
		goRedisLogging.mu.Lock()
		defer goRedisLogging.mu.Unlock()
		if !goRedisLogging.chosen {
			goredis.SetLogger(quietLogger{})
		}
	})
}

// quietLogger is a go-redis logger that drops everything.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// stderrLogger is go-redis's default logger, which go-redis does not export.
type stderrLogger struct{ l *log.Logger }

func (s stderrLogger) Printf(_ context.Context, format string, v ...any) {
	_ = s.l.Output(2, fmt.Sprintf(format, v...))
}

// stderr writes to the process's stderr as it is at the time of the write.
type stderr struct{}

func (stderr) Write(p []byte) (int, error) { return os.Stderr.Write(p) }
