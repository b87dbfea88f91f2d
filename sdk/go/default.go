package lock

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// The default Manager: read without locking on every package-level call,
// opened under defaultMu at most once per SetDefault(nil).
var (
	defaultManager atomic.Pointer[Manager]
	defaultMu      sync.Mutex
)

// Default returns the process-wide Manager used by the package-level Try,
// Block and Make. It is opened on first use from ConfigFromEnv(); if that
// fails, every call on it returns the error, which wraps the cause (for
// example an *InvalidArgumentError naming a bad LOCK_DRIVER).
func Default() *Manager {
	if m := defaultManager.Load(); m != nil {
		return m
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if m := defaultManager.Load(); m != nil {
		return m
	}
	m, err := Open(ConfigFromEnv())
	if err != nil {
		m = &Manager{err: fmt.Errorf("lock: opening the default manager from the environment: %w", err)}
	}
	defaultManager.Store(m)
	return m
}

// SetDefault makes m the Manager returned by Default. SetDefault(nil) makes
// the next Default() open one from the environment again. The previous
// default is not closed: whoever made it owns it.
func SetDefault(m *Manager) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultManager.Store(m)
}
