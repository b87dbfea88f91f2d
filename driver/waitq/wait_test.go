//go:build unix

package waitq

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeKey is a key in memory that Wait's try takes: a holder's name, or ""
// when free. A release pokes the room, as a driver's does.
type fakeKey struct {
	mu     sync.Mutex
	holder string
}

func (k *fakeKey) try(name string) TryFunc {
	return func(context.Context) (bool, error) {
		k.mu.Lock()
		defer k.mu.Unlock()
		if k.holder != "" {
			return false, nil
		}
		k.holder = name
		return true, nil
	}
}

func (k *fakeKey) release(room string) {
	k.mu.Lock()
	k.holder = ""
	k.mu.Unlock()
	Poke(room)
}

// tickets counts the tickets queued in room.
func tickets(t *testing.T, room string) int {
	t.Helper()
	names, err := readNames(room)
	if err != nil {
		return 0
	}
	n := 0
	for _, name := range names {
		if strings.HasPrefix(name, ticketPrefix) {
			n++
		}
	}
	return n
}

// Waiters are served in the order they queued, and a cancelled waiter
// leaves the queue at once without holding up the ones behind it.
func TestWaitServesInOrder(t *testing.T) {
	defer Settle()
	room := t.TempDir() + string(os.PathSeparator) + "room"
	k := &fakeKey{holder: "first"}
	const n = 4
	served := make(chan string, n)
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i := range n {
		name := string(rune('a' + i))
		wctx := ctx
		if i == 1 {
			wctx = cancelled // b gives up while queued
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Wait(wctx, room, k.try(name), nil); err != nil {
				if i != 1 {
					t.Errorf("waiter %s: %v", name, err)
				}
				return
			}
			served <- name
		}()
		// Queue them one after the other: the next starts once this one's
		// ticket is in the room.
		deadline := time.Now().Add(10 * time.Second)
		for tickets(t, room) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %s did not queue", name)
			}
			time.Sleep(time.Millisecond)
		}
	}
	cancel()
	for _, want := range []string{"a", "c", "d"} {
		k.release(room)
		select {
		case got := <-served:
			if got != want {
				t.Fatalf("served %s, want %s (arrival order, b cancelled)", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("nobody was served after a release; want %s", want)
		}
	}
	wg.Wait()
	if left := tickets(t, room); left != 0 {
		t.Errorf("%d tickets left in the room", left)
	}
}
