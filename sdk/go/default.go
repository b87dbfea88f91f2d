package lock

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// The default Manager: read without locking on every package-level call,
// opened under defaultMu at most once per SetDefault(nil).
var (
	theDefault atomic.Pointer[Manager]
	defaultMu  sync.Mutex
)

// defaultManager is Default. When the environment names a manager that
// cannot be opened, every call on it returns the error, which wraps the
// cause (for example an *InvalidArgumentError naming a bad LOCK_DRIVER).
func defaultManager() *Manager {
	if m := theDefault.Load(); m != nil {
		return m
	}
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if m := theDefault.Load(); m != nil {
		return m
	}
	m, err := Open(ConfigFromEnv())
	if err != nil {
		m = broken(fmt.Errorf("lock: opening the default manager from the environment: %w", err))
	}
	theDefault.Store(m)
	return m
}

// setDefault is SetDefault. The previous default is not closed: whoever
// made it owns it.
func setDefault(m *Manager) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	theDefault.Store(m)
}
