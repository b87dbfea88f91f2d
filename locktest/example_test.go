package locktest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/zerotal/lock/locktest"
	lock "github.com/zerotal/lock/sdk/go"
)

// runReport is the code under test: a job that works in steps under a
// refreshed lock, and must stop as soon as the lock is lost.
func runReport(ctx context.Context, m *lock.Manager, steps chan<- int) error {
	return m.Try(ctx, "nightly-report", time.Second, func(ctx context.Context) error {
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return context.Cause(ctx) // the lock is lost: stop writing
			case steps <- i:
			}
		}
	}, lock.WithRefreshEvery(10*time.Millisecond))
}

// My job stops when the lock is lost: Expire makes the backend lose it
// while the job runs, and the job's next refresh finds it gone.
func Example_jobStopsWhenTheLockIsLost() {
	d := locktest.New()
	m := lock.New(d)
	defer m.Close()

	steps := make(chan int)
	done := make(chan error, 1)
	go func() { done <- runReport(context.Background(), m, steps) }()
	<-steps // the job is running

	_ = d.Expire("nightly-report")
	for {
		select {
		case <-steps:
			continue
		case err := <-done:
			var lost *lock.LostError
			fmt.Println("job stopped, lock lost:", errors.As(err, &lost), lost.Reason.Name())
			return
		}
	}
	// Output: job stopped, lock lost: true gone
}

// invoiceHandler is the code under test: it answers 409 Conflict while
// another request processes the same invoice, and 503 when the lock's
// backend fails.
func invoiceHandler(m *lock.Manager) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		err := m.Try(r.Context(), lock.Key("invoice", id), 30*time.Second, func(ctx context.Context) error {
			return nil // process the invoice
		})
		if err != nil {
			http.Error(w, err.Error(), lock.CodeOf(err).HTTPStatus())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// My handler returns 409 when the key is busy: Steal makes another owner
// hold the key, FailNext makes the backend fail once.
func Example_handlerAnswers409WhenTheKeyIsBusy() {
	d := locktest.New()
	m := lock.New(d)
	defer m.Close()
	h := invoiceHandler(m)
	get := func() int {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("POST", "/invoices?id=7", nil))
		return rec.Code
	}

	fmt.Println("free:", get())
	_, _ = d.Steal(lock.Key("invoice", "7"), time.Minute)
	fmt.Println("busy:", get())
	_ = d.Expire(lock.Key("invoice", "7"))
	d.FailNext(locktest.Acquire, 1, nil)
	fmt.Println("backend down:", get())
	fmt.Println("back:", get())
	// Output:
	// free: 204
	// busy: 409
	// backend down: 503
	// back: 204
}

// processWithRetry is the code under test: a worker that retries, a few
// times, when the lock's backend fails, and never when the key is busy.
func processWithRetry(ctx context.Context, m *lock.Manager, key string) (attempts int, err error) {
	for attempts = 1; ; attempts++ {
		err = m.Try(ctx, key, time.Minute, func(ctx context.Context) error { return nil })
		var backend *lock.DriverError
		if !errors.As(err, &backend) || attempts == 5 {
			return attempts, err
		}
		time.Sleep(time.Duration(attempts) * time.Millisecond) // back off
	}
}

// My worker retries after a backend error: the next two acquires fail, the
// third succeeds, and Calls shows what reached the driver.
func Example_workerRetriesAfterABackendError() {
	d := locktest.New()
	m := lock.New(d)
	defer m.Close()

	d.FailNext(locktest.Acquire, 2, nil)
	attempts, err := processWithRetry(context.Background(), m, "sync:42")
	fmt.Println("attempts:", attempts, "error:", err)
	for _, c := range d.CallsOf(locktest.Acquire) {
		fmt.Println(c.Op, c.Key, c.OK, c.Err)
	}
	// Output:
	// attempts: 3 error: <nil>
	// acquire sync:42 false locktest: injected backend failure
	// acquire sync:42 false locktest: injected backend failure
	// acquire sync:42 true <nil>
}
