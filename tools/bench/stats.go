package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// commandCounter is a go-redis hook that counts the requests a client sends:
// one per command, one per pipeline. Each is one round trip.
type commandCounter struct{ n atomic.Int64 }

// DialHook passes dials through uncounted: connection setup is not part of
// the steady state being measured.
func (c *commandCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one round trip per command.
func (c *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts one round trip per pipeline.
func (c *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// commandStats is INFO commandstats: calls per command name.
type commandStats map[string]int64

// readCommandStats reads INFO commandstats from c.
func readCommandStats(ctx context.Context, c *redis.Client) (commandStats, error) {
	info, err := c.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, fmt.Errorf("INFO commandstats: %w", err)
	}
	return parseCommandStats(info), nil
}

// parseCommandStats parses the text of INFO commandstats.
func parseCommandStats(info string) commandStats {
	stats := commandStats{}
	for line := range strings.Lines(info) {
		// cmdstat_publish:calls=12,usec=34,...
		name, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		if n, err := strconv.ParseInt(calls, 10, 64); err == nil {
			stats[name] = n
		}
	}
	return stats
}

// pubsubCalls is how many publish and (un)subscribe commands the server ran
// between before and after, including those run by scripts: each PUBLISH
// sends a message, each SUBSCRIBE is a request, and a table of round trips
// per acquisition that left them out would flatter the libraries that use
// pub/sub.
func pubsubCalls(before, after commandStats) int64 {
	var n int64
	for _, name := range []string{"publish", "spublish", "subscribe", "ssubscribe", "psubscribe", "unsubscribe", "sunsubscribe", "punsubscribe"} {
		n += after[name] - before[name]
	}
	return n
}

// measureRTT returns the median time of n PINGs through c: one round trip as
// a go-redis client sees it, the unit the hand-off targets are stated in.
func measureRTT(ctx context.Context, c *redis.Client, n int) (time.Duration, error) {
	times := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := c.Ping(ctx).Err(); err != nil {
			return 0, fmt.Errorf("PING: %w", err)
		}
		times = append(times, time.Since(start))
	}
	return percentile(times, 0.5), nil
}

// rttProbe measures round trips while a scenario runs: a PING every
// rttProbeEvery from a goroutine that sleeps in between, so that each PING,
// like a hand-off, starts from a parked goroutine on a machine the workers
// keep busy. A PING loop on an idle client measures something no waiter
// ever sees: a goroutine that never parks.
type rttProbe struct {
	stop  context.CancelFunc
	done  chan struct{}
	times []time.Duration
	err   error
}

// rttProbeEvery is the pause between two PINGs of an rttProbe.
const rttProbeEvery = 2 * time.Millisecond

// startRTTProbe starts pinging through c until stop.
func startRTTProbe(ctx context.Context, c *redis.Client) *rttProbe {
	ctx, cancel := context.WithCancel(ctx)
	p := &rttProbe{stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		timer := time.NewTimer(rttProbeEvery)
		defer timer.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}
			start := time.Now()
			if err := c.Ping(ctx).Err(); err != nil {
				if ctx.Err() == nil {
					p.err = fmt.Errorf("PING: %w", err)
				}
				return
			}
			p.times = append(p.times, time.Since(start))
			timer.Reset(rttProbeEvery)
		}
	}()
	return p
}

// median stops the probe and returns the median round trip.
func (p *rttProbe) median() (time.Duration, error) {
	p.stop()
	<-p.done
	if p.err == nil && len(p.times) == 0 {
		p.err = errors.New("no PING completed during the scenario")
	}
	return percentile(p.times, 0.5), p.err
}

// percentile returns the p-quantile (0..1) of ds by nearest rank, sorting ds
// in place; 0 for no values.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	i := int(math.Ceil(p*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

// jain returns Jain's fairness index of xs: (Σx)² / (n·Σx²), 1 when all are
// equal and 1/n when one has everything; 0 for no values or all zero.
func jain(xs []int) float64 {
	var sum, squares float64
	for _, x := range xs {
		sum += float64(x)
		squares += float64(x) * float64(x)
	}
	if squares == 0 {
		return 0
	}
	return sum * sum / (float64(len(xs)) * squares)
}

// median returns the median of xs, sorting a copy; 0 for no values.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
