//go:build unix

package waitq

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"
)

// Close returns only after the waits in flight have returned and their
// watchers have closed, refuses new waits, and may run while other Drivers'
// waits start and end (run with -race: a sync.WaitGroup for the background
// closes made that a data race).
func TestWaitsCloseAwaitsTheWaitsInFlight(t *testing.T) {
	var w Waits
	life, end := context.WithCancel(context.Background())
	k := &fakeKey{holder: "holder"}
	room := t.TempDir() + string(os.PathSeparator) + "room"
	const n = 3
	var returned sync.WaitGroup
	var mu sync.Mutex
	done := 0
	for range n {
		if !w.Start() {
			t.Fatal("Start before Close = false, want true")
		}
		returned.Add(1)
		go func() {
			defer returned.Done()
			defer w.Done()
			_ = Wait(life, room, k.try("waiter"), nil)
			// Work a wait does on its way out (a give-back) before Done.
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			done++
			mu.Unlock()
		}()
	}
	// Waits of another Driver start and end while this one closes.
	otherRoom := t.TempDir() + string(os.PathSeparator) + "other"
	stop := make(chan struct{})
	var others sync.WaitGroup
	others.Add(1)
	go func() {
		defer others.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
			_ = Wait(ctx, otherRoom, (&fakeKey{holder: "x"}).try("y"), nil)
			cancel()
		}
	}()
	for tickets(t, room) < n {
		time.Sleep(time.Millisecond) // polling for the queue, not for a result
	}
	end()
	w.Close()
	mu.Lock()
	got := done
	mu.Unlock()
	if got != n {
		t.Errorf("Close returned with %d of %d waits finished", got, n)
	}
	if w.Start() {
		t.Error("Start after Close = true, want false")
	}
	close(stop)
	others.Wait()
	returned.Wait()
	Settle()
}
