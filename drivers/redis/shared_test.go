package redis

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Calls of many goroutines on one Driver share round trips: the server reads
// far fewer requests than the calls, and every call still gets its own
// answer (each goroutine cycles on a key of its own and checks its tokens).
func TestConcurrentCallsShareRoundTrips(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	rc := s.client(t)
	ctx := t.Context()
	const goroutines, cycles = 16, 200
	readsBefore := serverReads(t, rc)
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key, owner := testKey(t, "shared"+strconv.Itoa(g)), newOwner()
			var last uint64
			for range cycles {
				token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute)
				if err != nil || !ok || token <= last {
					errs <- errors.Join(err, errors.New("acquire: not taken, or a token that did not increase"))
					return
				}
				last = token
				if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
					errs <- errors.Join(err, errors.New("release: not released"))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	calls := int64(goroutines * cycles * 2)
	reads := serverReads(t, rc) - readsBefore
	t.Logf("%d calls, %d server reads (%.2f per call)", calls, reads, float64(reads)/float64(calls))
	if reads >= calls*3/4 {
		t.Fatalf("the server read %d requests for %d calls: the calls did not share round trips", reads, calls)
	}
}

// A call that shares a round trip returns when its ctx ends, even while the
// server answers nothing, and the Driver works on once the server is back.
func TestASharedCallReturnsAtItsDeadline(t *testing.T) {
	s := startServer(t)
	d := s.open(t)
	ctx := t.Context()
	key, owner := testKey(t, "shared-deadline"), newOwner()
	if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	s.Pause()
	// A call in flight, so that the next one goes through the pipeliner.
	first := make(chan error, 1)
	go func() {
		fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := d.Extend(fctx, key, owner, time.Minute)
		first <- err
	}()
	if !waitUntil(5*time.Second, func() bool { return d.scripts.busy.Load() == 1 }) {
		t.Fatal("the first call never started")
	}
	sctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := d.Extend(sctx, key, owner, time.Minute)
	took := time.Since(start)
	s.Resume()
	if !errors.Is(err, context.DeadlineExceeded) || took > 3*time.Second {
		t.Fatalf("a shared call with a 200ms deadline returned %v after %v; want its deadline, promptly", err, took)
	}
	if err := <-first; err != nil {
		t.Fatalf("the first call, whose deadline had not passed: %v", err)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release after the server came back = %v, %v", ok, err)
	}
}

// serverReads returns the server's total_reads_processed: the requests,
// batched or not, it has read.
func serverReads(t *testing.T, rc *goredis.Client) int64 {
	t.Helper()
	info, err := rc.InfoMap(t.Context(), "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.ParseInt(info["Stats"]["total_reads_processed"], 10, 64)
	if err != nil {
		t.Fatalf("INFO stats has no total_reads_processed: %v", info["Stats"])
	}
	return n
}
