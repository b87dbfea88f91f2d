package etcd

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
	"go.uber.org/zap"

	"github.com/zerotal/lock/drivers/etcd/etcdtest"
)

// The benchmarks run side by side, in one run, on one private server that
// fsyncs its log as etcd does by default (set ZEROTAL_ETCD_BENCH_NOFSYNC=1
// for a server that does not):
//
//	go test -run '^$' -bench . -benchtime 2000x -count 3 .
//
// BenchmarkCycle is an uncontended acquire+release. Each sub-benchmark's
// ns/op is one cycle:
//
//	zerotal       the Driver: a lease grant and an acquiring Txn, then a
//	              releasing Txn (its lease is revoked in the background)
//	bare          the same three requests with nothing around them: what
//	              the Driver's overhead is measured against
//	mutex         etcd's concurrency.Mutex, Lock and Unlock, on a session
//	              made once (its lease is kept alive in the background and
//	              is not the lock's: no TTL per lock)
//	mutex+session concurrency.Mutex with a session per lock, the closest
//	              to a lock with a TTL of its own: grant, Lock, Unlock,
//	              revoke, and the session's keep-alive stream
//
// BenchmarkContention is 8 workers on one key, each on a client of its own
// as separate processes would be, taking the key in turn and holding it for
// 1ms. ns/op is per acquisition; the custom metrics are the hand-off
// (Release called to the next holder's acquire returning) at the median
// and p99, in µs and in write round trips (the median of a Put that a probe
// sends every 5ms on the same server during the run), Jain's fairness
// index of acquisitions per worker, and the longest wait.

// benchCluster returns the benchmarks' server, fsyncing unless
// ZEROTAL_ETCD_BENCH_NOFSYNC is set.
func benchCluster(b *testing.B) *etcdtest.Cluster {
	b.Helper()
	if os.Getenv("ZEROTAL_ETCD_BENCH_NOFSYNC") != "" {
		return etcdtest.Start(b)
	}
	return etcdtest.Start(b, etcdtest.WithFsync())
}

// benchClient returns a client on c, closed at b's cleanup.
func benchClient(b *testing.B, c *etcdtest.Cluster) *clientv3.Client {
	b.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	return cli
}

func BenchmarkCycle(b *testing.B) {
	c := benchCluster(b)
	ctx := context.Background()
	b.Run("zerotal", func(b *testing.B) {
		d := openDriver(b, c.URL())
		key, owner := testKey(b, "cycle"), newOwner()
		b.ReportAllocs()
		for b.Loop() {
			if ok, err := d.Acquire(ctx, key, owner, time.Minute); err != nil || !ok {
				b.Fatalf("Acquire = %v, %v", ok, err)
			}
			if ok, err := d.Release(ctx, key, owner); err != nil || !ok {
				b.Fatalf("Release = %v, %v", ok, err)
			}
		}
	})
	b.Run("bare", func(b *testing.B) {
		cli := benchClient(b, c)
		key, owner := DefaultPrefix+testKey(b, "bare"), newOwner()
		b.ReportAllocs()
		for b.Loop() {
			lease, err := cli.Grant(ctx, 60)
			if err != nil {
				b.Fatal(err)
			}
			resp, err := cli.Txn(ctx).
				If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
				Then(clientv3.OpPut(key, owner, clientv3.WithLease(lease.ID))).
				Commit()
			if err != nil || !resp.Succeeded {
				b.Fatalf("acquiring Txn = %v, %v", resp, err)
			}
			resp, err = cli.Txn(ctx).
				If(clientv3.Compare(clientv3.Value(key), "=", owner)).
				Then(clientv3.OpDelete(key)).
				Commit()
			if err != nil || !resp.Succeeded {
				b.Fatalf("releasing Txn = %v, %v", resp, err)
			}
		}
	})
	b.Run("mutex", func(b *testing.B) {
		cli := benchClient(b, c)
		s, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		m := concurrency.NewMutex(s, DefaultPrefix+testKey(b, "mutex"))
		b.ReportAllocs()
		for b.Loop() {
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mutex+session", func(b *testing.B) {
		cli := benchClient(b, c)
		pfx := DefaultPrefix + testKey(b, "mutex-session")
		b.ReportAllocs()
		for b.Loop() {
			s, err := concurrency.NewSession(cli, concurrency.WithTTL(60))
			if err != nil {
				b.Fatal(err)
			}
			m := concurrency.NewMutex(s, pfx)
			if err := m.Lock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := m.Unlock(ctx); err != nil {
				b.Fatal(err)
			}
			if err := s.Close(); err != nil { // revokes the lease
				b.Fatal(err)
			}
		}
	})
}

// contender is one worker's handle on the contended key.
type contender interface {
	lock(ctx context.Context) error
	unlock(ctx context.Context) error
}

// driverContender takes the key through a Driver, as the engine's Block
// does: AcquireWait, then Release.
type driverContender struct {
	d     *Driver
	key   string
	owner string
}

func (c *driverContender) lock(ctx context.Context) error {
	c.owner = newOwner()
	_, err := c.d.AcquireWait(ctx, c.key, c.owner, time.Minute)
	return err
}

func (c *driverContender) unlock(ctx context.Context) error {
	ok, err := c.d.Release(ctx, c.key, c.owner)
	if err == nil && !ok {
		err = fmt.Errorf("release of a held key = false")
	}
	return err
}

// mutexContender takes the key through concurrency.Mutex on a session of its
// own.
type mutexContender struct{ m *concurrency.Mutex }

func (c *mutexContender) lock(ctx context.Context) error   { return c.m.Lock(ctx) }
func (c *mutexContender) unlock(ctx context.Context) error { return c.m.Unlock(ctx) }

func BenchmarkContention(b *testing.B) {
	const workers = 8
	c := benchCluster(b)
	probe := benchClient(b, c)
	b.Run("zerotal", func(b *testing.B) {
		key := testKey(b, "contention")
		cs := make([]contender, workers)
		for i := range cs {
			cs[i] = &driverContender{d: openDriver(b, c.URL()), key: key}
		}
		runContention(b, cs, probe)
	})
	b.Run("mutex", func(b *testing.B) {
		pfx := DefaultPrefix + testKey(b, "contention-mutex")
		cs := make([]contender, workers)
		for i := range cs {
			s, err := concurrency.NewSession(benchClient(b, c), concurrency.WithTTL(60))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			cs[i] = &mutexContender{m: concurrency.NewMutex(s, pfx)}
		}
		runContention(b, cs, probe)
	})
}

// rttProbe measures the round trip of a write through the log, the unit of
// the hand-off metric: Puts of a key of its own, one every probeEvery,
// while the workers contend, since a loaded server is slower than an idle
// one for every client.
type rttProbe struct {
	samples []time.Duration
	done    chan struct{}
}

const probeEvery = 5 * time.Millisecond

func startProbe(ctx context.Context, b *testing.B, cli *clientv3.Client) *rttProbe {
	p := &rttProbe{done: make(chan struct{})}
	key := DefaultPrefix + testKey(b, "rtt")
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			start := time.Now()
			if _, err := cli.Put(ctx, key, "x"); err == nil {
				p.samples = append(p.samples, time.Since(start))
			}
			time.Sleep(probeEvery)
		}
	}()
	return p
}

// median waits for the probe to stop and returns its median.
func (p *rttProbe) median() time.Duration {
	<-p.done
	if len(p.samples) == 0 {
		return 0
	}
	slices.Sort(p.samples)
	return p.samples[len(p.samples)/2]
}

// contentionHoldTime is how long a benchmark worker holds the key.
const contentionHoldTime = time.Millisecond

// runContention has the contenders take the key in turn until b.N
// acquisitions have begun, and reports the hand-off, fairness and wait
// metrics.
func runContention(b *testing.B, cs []contender, probeClient *clientv3.Client) {
	var (
		mu          sync.Mutex
		acquired    int
		perWorker   = make([]int, len(cs))
		handoffs    []time.Duration
		longestWait time.Duration
		lastRelease time.Time // when the last holder called unlock
		lastHolder  = -1
		errs        int
	)
	// At least a few rounds, so that even the first run (b.N = 1) hands
	// the key over.
	target := max(b.N, 4*len(cs))
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	probe := startProbe(ctx, b, probeClient)
	var wg sync.WaitGroup
	b.ResetTimer()
	for w, c := range cs {
		wg.Go(func() {
			for ctx.Err() == nil {
				called := time.Now()
				if err := c.lock(ctx); err != nil {
					if ctx.Err() == nil {
						mu.Lock()
						errs++
						mu.Unlock()
					}
					continue
				}
				got := time.Now()
				mu.Lock()
				acquired++
				perWorker[w]++
				longestWait = max(longestWait, got.Sub(called))
				if lastHolder >= 0 && lastHolder != w {
					handoffs = append(handoffs, got.Sub(lastRelease))
				}
				done := acquired >= target
				mu.Unlock()
				time.Sleep(contentionHoldTime)
				mu.Lock()
				lastRelease, lastHolder = time.Now(), w
				mu.Unlock()
				uctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := c.unlock(uctx); err != nil {
					mu.Lock()
					errs++
					mu.Unlock()
				}
				cancel()
				if done {
					stop()
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	stop()
	rtt := probe.median()
	if errs > 0 {
		b.Errorf("%d lock or unlock calls failed", errs)
	}
	if len(handoffs) == 0 {
		b.Fatal("no hand-offs between workers")
	}
	slices.Sort(handoffs)
	p50, p99 := handoffs[len(handoffs)/2], handoffs[len(handoffs)*99/100]
	b.ReportMetric(float64(p50.Microseconds()), "handoff-p50-µs")
	b.ReportMetric(float64(p99.Microseconds()), "handoff-p99-µs")
	b.ReportMetric(float64(p50)/float64(rtt), "handoff-p50-RTTs")
	b.ReportMetric(float64(rtt.Microseconds()), "RTT-µs")
	b.ReportMetric(jain(perWorker), "jain")
	b.ReportMetric(float64(longestWait.Microseconds())/1000, "longest-wait-ms")
}

// jain is Jain's fairness index of xs: 1 when all are equal, 1/len(xs) when
// one worker got everything.
func jain(xs []int) float64 {
	var sum, squares float64
	for _, x := range xs {
		sum += float64(x)
		squares += float64(x) * float64(x)
	}
	if squares == 0 {
		return math.NaN()
	}
	return sum * sum / (float64(len(xs)) * squares)
}
