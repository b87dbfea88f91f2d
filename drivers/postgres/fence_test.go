package postgres

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// serverMicros returns the server's clock in microseconds.
func serverMicros(t *testing.T, conn *pgx.Conn) uint64 {
	t.Helper()
	var us int64
	if err := conn.QueryRow(t.Context(), `SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint`).Scan(&us); err != nil {
		t.Fatal(err)
	}
	return uint64(us)
}

func TestFencingTokensIncreaseAcrossReleaseExpiryAndForceRelease(t *testing.T) {
	w := newWaitSetup(t)
	a, b := w.open(t), w.open(t)
	ctx := t.Context()
	key := testKey("fence")

	start := serverMicros(t, w.conn)
	var last uint64
	for i := range 100 {
		d := a
		if i%2 == 1 {
			d = b
		}
		owner := newOwner()
		token, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute)
		if err != nil || !ok {
			t.Fatalf("cycle %d: AcquireFenced = %v, %v", i, ok, err)
		}
		if token <= last {
			t.Fatalf("cycle %d: token %d after %d; tokens must increase", i, token, last)
		}
		if i == 0 && token < start {
			t.Fatalf("first token %d is below the server's clock %dµs before it was taken", token, start)
		}
		if again, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute); err != nil || !ok || again != token {
			t.Fatalf("cycle %d: re-acquire by the holder = %d, %v, %v; want the same token %d", i, again, ok, err, token)
		}
		if token, ok, err := b.AcquireFenced(ctx, key, newOwner(), time.Minute); err != nil || ok || token != 0 {
			t.Fatalf("cycle %d: contended AcquireFenced = %d, %v, %v; want 0, false, nil", i, token, ok, err)
		}
		last = token
		switch i % 3 {
		case 0:
			if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
				t.Fatalf("cycle %d: Release = %v, %v", i, ok, err)
			}
		case 1:
			if err := a.ForceRelease(ctx, key); err != nil {
				t.Fatalf("cycle %d: ForceRelease: %v", i, err)
			}
		case 2:
			// Expiry ends this holder: shorten its TTL to 1µs.
			if ok, err := d.Extend(ctx, key, owner, time.Microsecond); err != nil || !ok {
				t.Fatalf("cycle %d: Extend = %v, %v", i, ok, err)
			}
			if !waitUntil(2*time.Second, func() bool { held, err := a.Exists(ctx, key); return err == nil && !held }) {
				t.Fatalf("cycle %d: a 1µs lock did not expire", i)
			}
		}
	}
}

// TestReleaseKeepsTheRowForItsToken shows why a release marks the key's
// row free instead of deleting it. A token is max(the row's last token + 1,
// the server's clock in µs). Here the row's last token is ahead of the
// clock, as it is after the clock stepped back (or after many grants within
// one µs): with the row kept, the next token still counts on from it; with
// the row deleted, the next token comes from the clock alone and goes back,
// and a resource that remembers the highest token would reject the new
// holder while a stale one could still pass.
func TestReleaseKeepsTheRowForItsToken(t *testing.T) {
	w := newWaitSetup(t)
	d := w.open(t)
	ctx := t.Context()
	key, owner := testKey("kept"), newOwner()
	if _, ok, err := d.AcquireFenced(ctx, key, owner, time.Minute); err != nil || !ok {
		t.Fatalf("AcquireFenced = %v, %v", ok, err)
	}
	ahead := serverMicros(t, w.conn) + 3_600_000_000 // an hour ahead of the clock
	if _, err := w.conn.Exec(ctx, `UPDATE `+d.table.quoted()+` SET token = $2 WHERE key = $1`, key, int64(ahead)); err != nil {
		t.Fatal(err)
	}
	if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	var rows int
	var kept int64
	if err := w.conn.QueryRow(ctx, `SELECT count(*), max(token) FROM `+d.table.quoted()+` WHERE key = $1 AND owner = ''`, key).Scan(&rows, &kept); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || uint64(kept) != ahead {
		t.Fatalf("after Release the table has %d free rows for the key with token %d; want 1 with %d", rows, kept, ahead)
	}
	next, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || !ok || next != ahead+1 {
		t.Fatalf("AcquireFenced after Release = %d, %v, %v; want %d (the kept token + 1)", next, ok, err, ahead+1)
	}

	// What deleting the row would do: the token comes from the clock and
	// goes back.
	if err := d.ForceRelease(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := w.conn.Exec(ctx, `DELETE FROM `+d.table.quoted()+` WHERE key = $1`, key); err != nil {
		t.Fatal(err)
	}
	after, ok, err := d.AcquireFenced(ctx, key, newOwner(), time.Minute)
	if err != nil || !ok {
		t.Fatalf("AcquireFenced after the row was deleted = %v, %v", ok, err)
	}
	if after >= next {
		t.Fatalf("with the row deleted the token is %d, not below %d: this test no longer shows why rows are kept", after, next)
	}
}

// TestTokensNeverGoBackwardsUnderConcurrentAcquirers has acquirers on
// separate Drivers (separate pools and connections) race for one key,
// ending their holds by release, force release and expiry. Inside each
// critical section the holder checks its token against the highest seen
// so far, as a fenced resource would: any token at or below it is a token
// that went back.
func TestTokensNeverGoBackwardsUnderConcurrentAcquirers(t *testing.T) {
	w := newWaitSetup(t)
	const (
		acquirers = 6
		holds     = 300
	)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	key := testKey("race")
	var (
		mu       sync.Mutex
		highest  uint64
		backward []string
		taken    atomic.Int32
		inside   atomic.Int32
		overlaps atomic.Int32
		wg       sync.WaitGroup
		errs     = make(chan error, acquirers)
	)
	for i := range acquirers {
		d := w.open(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; taken.Load() < holds; n++ {
				owner := newOwner()
				token, ok, err := d.AcquireFenced(ctx, key, owner, 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				if !ok {
					continue
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				mu.Lock()
				if token <= highest {
					backward = append(backward, fmt.Sprintf("%d after %d", token, highest))
				}
				highest = max(highest, token)
				mu.Unlock()
				taken.Add(1)
				inside.Add(-1)
				switch (i + n) % 3 {
				case 0:
					_, err = d.Release(ctx, key, owner)
				case 1:
					err = d.ForceRelease(ctx, key)
				case 2:
					// Shorten the lease to nothing: the next holder
					// takes the key by its expiry.
					_, err = d.Extend(ctx, key, owner, time.Microsecond)
				}
				if err != nil {
					errs <- err
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
	if n := overlaps.Load(); n != 0 {
		t.Fatalf("%d overlapping critical sections", n)
	}
	if len(backward) > 0 {
		t.Fatalf("%d tokens went back, e.g. %s", len(backward), backward[0])
	}
	if n := taken.Load(); n < holds {
		t.Fatalf("only %d acquisitions", n)
	}
}
