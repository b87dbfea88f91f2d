package file

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCycle measures an uncontended acquire+release on one key: mkdir,
// write, rename to take it; open, list, unlink, rmdir to free it.
func BenchmarkCycle(b *testing.B) {
	d := openDriver(b, b.TempDir())
	ctx, owner := context.Background(), newOwner()
	b.ReportAllocs()
	for b.Loop() {
		ok, err := d.Acquire(ctx, "bench", owner, time.Minute)
		if err != nil || !ok {
			b.Fatalf("Acquire = %v, %v", ok, err)
		}
		if ok, err := d.Release(ctx, "bench", owner); err != nil || !ok {
			b.Fatalf("Release = %v, %v", ok, err)
		}
	}
}

// BenchmarkExtend measures the holder's refresh.
func BenchmarkExtend(b *testing.B) {
	d := openDriver(b, b.TempDir())
	ctx, owner := context.Background(), newOwner()
	mustAcquire(b, d, "bench", owner, time.Minute)
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := d.Extend(ctx, "bench", owner, time.Minute); err != nil || !ok {
			b.Fatalf("Extend = %v, %v", ok, err)
		}
	}
}

// BenchmarkAcquireHeld measures a refused Acquire: what each retry of a
// blocked caller costs.
func BenchmarkAcquireHeld(b *testing.B) {
	d := openDriver(b, b.TempDir())
	ctx := context.Background()
	mustAcquire(b, d, "bench", newOwner(), time.Minute)
	other := newOwner()
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := d.Acquire(ctx, "bench", other, time.Minute); err != nil || ok {
			b.Fatalf("Acquire = %v, %v", ok, err)
		}
	}
}
