package memory_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/zerotal/lock/drivers/memory"
)

// TestTableSizeFollowsLiveLocks takes many distinct keys with 1ms TTLs and
// never releases them; once they have expired, one more operation must leave
// nothing behind.
func TestTableSizeFollowsLiveLocks(t *testing.T) {
	ctx := context.Background()
	table := memory.NewTable()
	d := newDriver(t, table)
	const keys = 100_000

	for i := range keys {
		if ok, err := d.Acquire(ctx, fmt.Sprintf("key-%d", i), newOwner(), time.Millisecond); !ok || err != nil {
			t.Fatalf("Acquire = %v, %v", ok, err)
		}
	}
	time.Sleep(2 * time.Millisecond) // let the last TTL pass
	if _, err := d.Exists(ctx, "unrelated"); err != nil {
		t.Fatal(err)
	}
	if n := memory.Size(table); n != 0 {
		t.Fatalf("table keeps %d entries after every lock expired", n)
	}
}
