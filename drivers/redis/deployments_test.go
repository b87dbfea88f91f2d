package redis_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/redis/redistest"
	lock "github.com/zerotal/lock/sdk/go"
)

// takeTurns runs a few Try and Block calls of two managers on one key, as a
// smoke test of a deployment reached by URL.
func takeTurns(t *testing.T, url string) {
	t.Helper()
	ctx := t.Context()
	a, err := lock.Open(lock.Config{URL: url, Prefix: "deploy-test:"})
	if err != nil {
		t.Fatalf("Open(%s) = %v", url, err)
	}
	defer a.Close()
	b, err := lock.Open(lock.Config{URL: url, Prefix: "deploy-test:"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	held := a.Make("job", time.Minute)
	if ok, err := held.Acquire(ctx); !ok || err != nil {
		t.Fatalf("Acquire = %v, %v", ok, err)
	}
	first := held.Token()
	if err := b.Try(ctx, "job", time.Minute, func(context.Context) error { return nil }); !errors.Is(err, lock.ErrNotAcquired) {
		t.Fatalf("Try on a held key = %v; want ErrNotAcquired", err)
	}
	waited := make(chan error, 1)
	go func() {
		waited <- b.Block(ctx, "job", time.Minute, func(ctx context.Context) error {
			l, _ := lock.FromContext(ctx)
			if l.Token() <= first {
				return errors.New("the waiter's token did not increase")
			}
			return nil
		}, lock.WithTimeout(30*time.Second))
	}()
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("Block after the release = %v", err)
	}
}

func TestOpenByURLReachesACluster(t *testing.T) {
	c := redistest.StartCluster(t, 3, 0, 2*time.Second)
	takeTurns(t, c.URL())
}

func TestOpenByURLReachesASentinelDeployment(t *testing.T) {
	st := redistest.StartSentinel(t, 1, 1, time.Second)
	takeTurns(t, st.URL())
	// A sentinel URL without the master's name is refused by name.
	_, err := lock.Open(lock.Config{URL: strings.Replace(st.URL(), "master_name=", "x=", 1)})
	if !errors.Is(err, lock.ErrInvalidArgument) {
		t.Fatalf("Open of a sentinel URL without master_name = %v; want an invalid argument", err)
	}
}

func TestOpenByNameAndURLReachesAServer(t *testing.T) {
	s := redistest.StartT(t)
	takeTurns(t, s.URL())
	for _, cfg := range []lock.Config{{Driver: "redis", Redis: lock.RedisConfig{URL: s.URL()}}} {
		m, err := lock.Open(cfg)
		if err != nil {
			t.Fatalf("Open(%+v) = %v", cfg, err)
		}
		_ = m.Close()
	}
}
