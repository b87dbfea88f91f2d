package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

// Two handles on one table contend for a key; the second queues with
// AcquireWait and is handed the key, with a higher fencing token, the moment
// the first releases it.
func Example() {
	ctx := context.Background()
	table := memory.NewTable()
	first, second := table.Driver(), table.Driver()
	defer first.Close()
	defer second.Close()
	const alice, bob = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"

	token, ok, _ := first.AcquireFenced(ctx, "invoice:7", alice, 30*time.Second)
	fmt.Println("alice holds the key:", ok)

	type grant struct {
		token uint64
		err   error
	}
	handedOver := make(chan grant)
	go func() {
		next, err := second.AcquireWait(ctx, "invoice:7", bob, 30*time.Second)
		handedOver <- grant{next, err}
	}()

	// Only the holder can release; the key goes straight to the waiter (or
	// stays free if bob has not queued yet, and AcquireWait takes it then).
	released, _ := first.Release(ctx, "invoice:7", alice)
	fmt.Println("alice released:", released)
	g := <-handedOver
	fmt.Println("bob got the key:", g.err == nil)
	fmt.Println("bob's token is higher:", g.token > token)

	holder, _, _ := first.Inspect(ctx, "invoice:7")
	fmt.Println("holder is bob:", holder.Owner == bob)
	// Output:
	// alice holds the key: true
	// alice released: true
	// bob got the key: true
	// bob's token is higher: true
	// holder is bob: true
}
