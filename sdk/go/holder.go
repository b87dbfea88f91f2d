package lock

import "github.com/zerotal/lock/core/driver"

// Holder describes the current holder of a key, as [ManagedLock.Holder]
// reports it: owner token, fencing token, acquired and expiry times, and the
// holding process and host where the driver records them. Zero fields mean
// "unknown". It is the driver contract's type, named here so that callers
// need not import core/driver.
type Holder = driver.Holder
