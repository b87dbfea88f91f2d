// Package main is the C ABI of zerotal lock: built with
// go build -buildmode=c-shared (make cshared), it is libzerotal_lock.so, and
// zerotal_lock.h is its public header. It wraps the Go API of
// github.com/zerotal/lock/sdk/go, so C and every language that calls C (the
// Python client in sdk/python) take the same locks through the same engine
// and drivers as Go programs.
//
// exports_gen.go holds the exported functions and zerotal_lock.h the header,
// both generated from spec/ by lockgen (make generate). What is written by
// hand is the runtime glue the exports call:
//
//   - handles.go: the handle table: C holds integers, never Go pointers;
//   - errors.go and lasterror.c: error codes, the per-thread last error, and
//     the recovery that turns a panic into ZL_INTERNAL;
//   - convert.go: durations, times, booleans and caller-buffer strings;
//   - config.go: zl_open's JSON configuration;
//   - callback.go and callback.c: running a C callback under a lock;
//   - abi.go: the functions only the C ABI has (zl_free, zl_lost, ...).
//
// docs/c-abi.md explains how to build, link and use the library.
package main
