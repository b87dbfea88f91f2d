package waitq

import (
	"os"
	"sync"
)

// Holds are the held files one Driver keeps open, by key: one for each of
// its acquisitions of a key that someone waits (or once waited) for, so that
// the kernel closes it, and wakes the key's waiters, if this process dies.
// The zero value is ready to use; it is safe for concurrent use.
type Holds struct {
	mu     sync.Mutex
	files  map[string]heldFile
	closed bool
}

// heldFile is the held file kept open for one acquisition.
type heldFile struct {
	owner string
	f     *os.File
}

// Keep opens room's held file for owner's new acquisition of key, unless it
// is open for owner already (a refresh of the same acquisition). A file kept
// for another owner is closed: this process has lost that acquisition.
func (h *Holds) Keep(room, key, owner string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	if old, ok := h.files[key]; ok {
		if old.owner == owner {
			return
		}
		_ = old.f.Close()
		delete(h.files, key)
	}
	if f := Hold(room); f != nil {
		if h.files == nil {
			h.files = make(map[string]heldFile)
		}
		h.files[key] = heldFile{owner: owner, f: f}
	}
}

// Released wakes the head of key's room after a release by owner, or by
// anyone when owner is "": closing key's held file does, and when none was
// kept for owner, a poke of the room (Poke). It reports whether a held file
// was closed.
func (h *Holds) Released(room, key, owner string) bool {
	h.mu.Lock()
	old, ok := h.files[key]
	ok = ok && (owner == "" || old.owner == owner)
	if ok {
		delete(h.files, key)
	}
	h.mu.Unlock()
	if !ok {
		Poke(room)
		return false
	}
	_ = old.f.Close()
	return true
}

// Forget closes key's held file if it was kept for owner, after a release
// that found the key lost: owner holds it no more, and nobody is woken on
// its behalf.
func (h *Holds) Forget(key, owner string) {
	h.mu.Lock()
	old, ok := h.files[key]
	ok = ok && old.owner == owner
	if ok {
		delete(h.files, key)
	}
	h.mu.Unlock()
	if ok {
		_ = old.f.Close()
	}
}

// Close closes every held file, at the Driver's Close; Keep does nothing
// after it.
func (h *Holds) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, f := range h.files {
		_ = f.f.Close()
	}
	h.files, h.closed = nil, true
}
