package memory

// Size reports how many entries t keeps, expired ones not yet reaped
// included.
func Size(t *Table) int { return t.size() }

// ArmedTimers reports how many hand-off timers t has scheduled.
func ArmedTimers(t *Table) int { return t.armedTimers() }
