package file

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/zerotal/lock/driver/process"
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

// BenchmarkBareCycle is the floor BenchmarkCycle stands on, for comparison
// in the same run: the system calls a directory lock cannot do without
// (mkdir, create and write the record, rename; unlink, rmdir), with no
// look, no listing and no owner check.
func BenchmarkBareCycle(b *testing.B) {
	dir := b.TempDir()
	pending, lock := filepath.Join(dir, ".pending-bench"), filepath.Join(dir, "bench")
	record := appendRecord(nil, recordPrefix(process.Self()), newOwner(), 1, 2)
	b.ReportAllocs()
	for b.Loop() {
		if err := os.Mkdir(pending, dirPerm); err != nil {
			b.Fatal(err)
		}
		if err := writeNew(filepath.Join(pending, "lease"), record); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Rename(pending, lock); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Unlink(filepath.Join(lock, "lease")); err != nil {
			b.Fatal(err)
		}
		if err := syscall.Rmdir(lock); err != nil {
			b.Fatal(err)
		}
	}
}
