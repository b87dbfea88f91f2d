//go:build !unix

package file

import (
	"errors"
	"io"
	"io/fs"
	"os"
)

// dirHandle is an open directory. Names are resolved against it, never
// against its path again (rule 5 in lockdir.go). This is the portable
// version, on os.Root.
type dirHandle struct {
	path string
	root *os.Root
}

// openDir opens the directory at path.
func openDir(path string) (*dirHandle, error) {
	r, err := os.OpenRoot(path)
	if err != nil {
		return nil, err
	}
	return &dirHandle{path: path, root: r}, nil
}

// close closes the directory.
func (h *dirHandle) close() { _ = h.root.Close() }

// names lists the directory.
func (h *dirHandle) names() ([]string, error) {
	f, err := h.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	return f.Readdirnames(-1)
}

// maxRecord bounds what readFile reads: a holder record is a few hundred
// bytes, and anything longer is not one.
const maxRecord = 64 << 10

// readFile returns the content of the file name.
func (h *dirHandle) readFile(name string) ([]byte, error) {
	f, err := h.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err == nil && len(b) > maxRecord {
		err = &fs.PathError{Op: "read", Path: h.path + "/" + name, Err: fs.ErrInvalid}
	}
	return b, err
}

// create makes the empty file name, failing if it exists.
func (h *dirHandle) create(name string) error {
	f, err := h.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	return f.Close()
}

// remove removes name and, if it is a directory, all it holds.
func (h *dirHandle) remove(name string) error {
	err := h.root.Remove(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return h.root.RemoveAll(name)
	}
	return err
}

// sameAs reports whether path names this directory.
func (h *dirHandle) sameAs(path string) (bool, error) {
	mine, err := h.root.Stat(".")
	if err != nil {
		return false, err
	}
	there, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return os.SameFile(mine, there), nil
}

// writeNew creates the file path, which must not exist, holding data.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, filePerm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
