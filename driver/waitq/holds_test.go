//go:build unix

package waitq

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// isOpen reports whether f is still open, by a call that fails on a closed
// file.
func isOpen(f *os.File) bool {
	_, err := f.Stat()
	return !errors.Is(err, os.ErrClosed)
}

func TestHolds(t *testing.T) {
	room := t.TempDir()
	var h Holds
	h.Keep(filepath.Join(room, "missing"), "k", "a") // no room: nothing kept
	if h.Released(room, "k", "a") {
		t.Fatal("Released reported a held file for a key kept in a missing room")
	}

	h.Keep(room, "k", "a")
	first := h.files["k"].f
	h.Keep(room, "k", "a") // a refresh: the same file
	if h.files["k"].f != first || !isOpen(first) {
		t.Fatal("Keep for the same owner replaced its held file")
	}
	h.Keep(room, "k", "b") // a new acquisition: the lost one's file goes
	if isOpen(first) {
		t.Fatal("Keep for a new owner left the old owner's file open")
	}
	second := h.files["k"].f

	h.Forget("k", "a") // not a's any more
	if !isOpen(second) {
		t.Fatal("Forget for another owner closed the file")
	}
	if h.Released(room, "k", "a") {
		t.Fatal("Released by another owner closed the file")
	}
	if !h.Released(room, "k", "b") || isOpen(second) {
		t.Fatal("Released by the owner did not close its file")
	}

	h.Keep(room, "k", "c")
	third := h.files["k"].f
	if !h.Released(room, "k", "") || isOpen(third) {
		t.Fatal(`Released by "" (a force release) did not close the file`)
	}

	h.Keep(room, "k", "d")
	fourth := h.files["k"].f
	h.Close()
	if isOpen(fourth) {
		t.Fatal("Close left a held file open")
	}
	h.Keep(room, "k", "e")
	if len(h.files) != 0 {
		t.Fatal("Keep after Close kept a file")
	}
}
