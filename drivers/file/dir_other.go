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

// openDir opens the directory at path. A symbolic link there is refused, not
// followed: clearing a stale lock deletes what is inside it, and that must
// never be a directory elsewhere. (The check and the open are two steps
// here; the Unix version refuses links atomically.)
func openDir(path string) (*dirHandle, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errNotDir}
	}
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

// readFile returns the content of the file name. A symbolic link, a
// directory or more than maxRecord bytes there is no holder record: the
// error then wraps errNotRecord.
func (h *dirHandle) readFile(name string) ([]byte, error) {
	fi, err := h.root.Lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: h.path + "/" + name, Err: errNotRecord}
	}
	f, err := h.root.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxRecord+1))
	if err == nil && len(b) > maxRecord {
		err = &fs.PathError{Op: "read", Path: h.path + "/" + name, Err: errNotRecord}
	}
	return b, err
}

// errNotDir reports a lock name that holds something other than a
// directory.
var errNotDir = errors.New("not a directory")

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
