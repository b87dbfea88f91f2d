//go:build !unix

package waitq

import (
	"context"
	"os"
)

// Wait takes a key through try. Without flock(2) there is no queue shared
// between processes here: it tries at every notice and every Poll.
func Wait(ctx context.Context, room string, try TryFunc, notices <-chan struct{}) error {
	return pollLoop(ctx, try, notices)
}

// Hold returns nil: nobody watches rooms here.
func Hold(string) *os.File { return nil }

// Poke does nothing: nobody watches rooms here.
func Poke(string) {}
