package main

import (
	"testing"
)

// BenchmarkCycle is the uncontended benchmark as testing.B benchmarks, one
// per library, on the package's private server:
//
//	cd tools/bench && go test -run '^$' -bench Cycle -benchmem -count 5
//
// Each sub-benchmark's ns/op is one acquire+release; compare them with
// benchstat. The command (go run .) interleaves the libraries in short
// slices instead, which is steadier on a shared machine.
func BenchmarkCycle(b *testing.B) {
	s := sharedServer(b)
	cs := cyclers(s, "bench:testing:")
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	for _, c := range cs {
		b.Run(c.short, func(b *testing.B) {
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				if err := c.cycle(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
