package conformance

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/zerotal/lock/driver"
)

const (
	contentionInstances = 3
	contentionWorkers   = 9 // spread over the instances
	contentionAttempts  = 400
	contentionBudget    = time.Second
	// checkBudget bounds the linearizability check; a history it cannot
	// decide in time is logged, not failed.
	checkBudget = 10 * time.Second
	// maxReports caps the failures of one kind a subtest prints: under
	// contention a broken driver fails the same way thousands of times.
	maxReports = 5
)

// testContention hammers one key from many goroutines over several instances
// and checks that no two critical sections overlap, that every holder can
// release what it took, and that the whole history of acquires and releases
// is linearizable against a one-holder lock model.
func testContention(e *env) {
	instances := make([]driver.Driver, contentionInstances)
	for i := range instances {
		instances[i] = e.open()
	}
	key := e.key("contended")
	var (
		inside   atomic.Int32 // goroutines between a true Acquire and their Release
		acquired atomic.Int64
		rec      = newRecorder()
		reports  = newReporter(e)
		wg       sync.WaitGroup
	)
	stop := time.Now().Add(contentionBudget)
	for w := range contentionWorkers {
		d := instances[w%len(instances)]
		wg.Go(func() {
			for range contentionAttempts {
				if time.Now().After(stop) || e.ctx.Err() != nil {
					return
				}
				owner := newOwner()
				ok, err := rec.do(w, opAcquire, owner, func() (bool, error) {
					return d.Acquire(e.ctx, key, owner, hold)
				})
				if err != nil {
					reports.add("error", "Acquire(%s) under contention: unexpected error: %v", show(key), err)
					return
				}
				if !ok {
					runtime.Gosched()
					continue
				}
				acquired.Add(1)
				if n := inside.Add(1); n > 1 {
					reports.add("overlap", "%d goroutines held %s at once: Acquire let more than one owner in", n, show(key))
				}
				// Give another goroutine the chance to enter while this
				// one is inside, so a driver that lets two in is seen.
				runtime.Gosched()
				inside.Add(-1)
				released, err := rec.do(w, opRelease, owner, func() (bool, error) {
					return d.Release(e.ctx, key, owner)
				})
				if err != nil {
					reports.add("error", "Release(%s) under contention: unexpected error: %v", show(key), err)
					return
				}
				if !released {
					reports.add("release", "Release(%s) by the owner whose Acquire returned true = false, want true: the lock was taken from its holder", show(key))
				}
			}
		})
	}
	wg.Wait()
	reports.flush()
	if acquired.Load() == 0 {
		e.t.Fatalf("no Acquire of %s succeeded in %d attempts by %d goroutines", show(key), contentionAttempts, contentionWorkers)
	}
	e.t.Logf("%d acquisitions, %d operations recorded", acquired.Load(), rec.len())
	if reports.count("error") > 0 {
		return // a history with failed calls has unknown outcomes; nothing to check
	}
	switch res := porcupine.CheckOperationsTimeout(lockModel, rec.history(), checkBudget); res {
	case porcupine.Illegal:
		e.t.Errorf("the history of %d Acquire and Release calls on %s is not linearizable: no order of them is consistent with one holder at a time",
			rec.len(), show(key))
	case porcupine.Unknown:
		e.t.Logf("linearizability check undecided after %v; overlap and release checks still apply", checkBudget)
	}
}

// opKind names the driver call a history entry records.
type opKind uint8

const (
	opAcquire opKind = iota
	opRelease
)

// lockInput is a history entry's call: which operation, by which owner.
type lockInput struct {
	op    opKind
	owner string
}

// lockModel is the sequential specification of one key whose TTL never runs
// out during the test: its state is the holding owner, "" when free.
var lockModel = porcupine.Model{
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		holder, in, ok := state.(string), input.(lockInput), output.(bool)
		switch in.op {
		case opAcquire:
			if holder == "" || holder == in.owner {
				return ok, in.owner
			}
			return !ok, holder
		default:
			if holder == in.owner {
				return ok, ""
			}
			return !ok, holder
		}
	},
	DescribeOperation: func(input, output any) string {
		in := input.(lockInput)
		name := "Acquire"
		if in.op == opRelease {
			name = "Release"
		}
		return fmt.Sprintf("%s(%s) -> %v", name, in.owner[:8], output)
	},
}

// recorder collects a concurrent history of driver calls with monotonic
// call and return times.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

// newRecorder starts a history whose times count from now.
func newRecorder() *recorder { return &recorder{start: time.Now()} }

// do runs call, which performs op for owner, and records it.
func (r *recorder) do(client int, op opKind, owner string, call func() (bool, error)) (bool, error) {
	called := time.Since(r.start).Nanoseconds()
	ok, err := call()
	returned := time.Since(r.start).Nanoseconds()
	r.mu.Lock()
	r.ops = append(r.ops, porcupine.Operation{
		ClientId: client, Input: lockInput{op, owner}, Output: ok, Call: called, Return: returned,
	})
	r.mu.Unlock()
	return ok, err
}

// history returns the calls recorded so far.
func (r *recorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ops
}

// len returns how many calls were recorded.
func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops)
}

// reporter gathers failures from many goroutines, prints the first few of
// each kind, and totals the rest once they are done.
type reporter struct {
	e      *env
	mu     sync.Mutex
	counts map[string]int
	order  []string
}

// newReporter returns a reporter that fails e's subtest.
func newReporter(e *env) *reporter { return &reporter{e: e, counts: make(map[string]int)} }

// add records a failure of kind, and prints it while that kind has been seen
// fewer than maxReports times. It is safe for concurrent use.
func (r *reporter) add(kind, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.counts[kind] == 0 {
		r.order = append(r.order, kind)
	}
	r.counts[kind]++
	if r.counts[kind] <= maxReports {
		r.e.t.Errorf(format, args...)
	}
}

// count returns how many failures of kind were added.
func (r *reporter) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[kind]
}

// flush prints how many failures of each kind went unprinted.
func (r *reporter) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, kind := range r.order {
		if n := r.counts[kind]; n > maxReports {
			r.e.t.Errorf("... and %d more %s failures like the above", n-maxReports, kind)
		}
	}
}
