package memory

// Size reports how many entries t keeps, expired ones not yet reaped
// included.
func Size(t *Table) int { return t.size() }

// Waiting reports how many AcquireWait calls are queued on key in t.
func Waiting(t *Table, key string) int { return t.waiting(key) }

// ArmedTimers reports how many hand-off timers t has scheduled.
func ArmedTimers(t *Table) int { return t.armedTimers() }
