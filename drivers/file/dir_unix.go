//go:build unix

package file

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// dirHandle is an open directory. Names are resolved against its descriptor,
// never against its path again (rule 5 in lockdir.go). This is the Unix
// version: raw descriptors, a third fewer system calls than os.Root.
type dirHandle struct {
	path   string
	fd     int
	listed bool // the read offset has moved: rewind before listing again
}

// openDir opens the directory at path. A symbolic link there is refused
// (ELOOP or ENOTDIR), not followed: clearing a stale lock deletes what is
// inside it, and that must never be a directory elsewhere.
func openDir(path string) (*dirHandle, error) {
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: goneErr(err)}
	}
	return &dirHandle{path: path, fd: fd}, nil
}

// close closes the descriptor.
func (h *dirHandle) close() { _ = unix.Close(h.fd) }

// names lists the directory, "." and ".." left out.
func (h *dirHandle) names() ([]string, error) {
	if h.listed {
		if _, err := unix.Seek(h.fd, 0, 0); err != nil {
			return nil, &fs.PathError{Op: "seek", Path: h.path, Err: goneErr(err)}
		}
	}
	h.listed = true
	var buf [4096]byte
	var names []string
	for {
		n, err := retry(func() (int, error) { return unix.ReadDirent(h.fd, buf[:]) })
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: h.path, Err: goneErr(err)}
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

// readFile returns the content of the file name. A symbolic link, a
// directory or more than maxRecord bytes there is no holder record: the
// error then wraps errNotRecord.
func (h *dirHandle) readFile(name string) ([]byte, error) {
	fd, err := retry(func() (int, error) {
		return unix.Openat(h.fd, name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	})
	if errors.Is(err, unix.ELOOP) {
		err = errNotRecord
	}
	if err != nil {
		return nil, h.pathErr("open", name, err)
	}
	defer func() { _ = unix.Close(fd) }()
	b := make([]byte, 0, 512)
	for len(b) <= maxRecord {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := retry(func() (int, error) { return unix.Read(fd, b[len(b):cap(b)]) })
		if errors.Is(err, unix.EISDIR) {
			err = errNotRecord
		}
		if err != nil {
			return nil, h.pathErr("read", name, err)
		}
		if n == 0 {
			return b, nil
		}
		b = b[:len(b)+n]
	}
	return nil, h.pathErr("read", name, errNotRecord)
}

// create makes the empty file name, failing if it exists.
func (h *dirHandle) create(name string) error {
	fd, err := retry(func() (int, error) {
		return unix.Openat(h.fd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, filePerm)
	})
	if err != nil {
		return h.pathErr("open", name, err)
	}
	return unix.Close(fd)
}

// remove unlinks the file name; a directory there is removed with all it
// holds, without following symbolic links.
func (h *dirHandle) remove(name string) error {
	return removeAt(h, name, maxJunkDepth)
}

// maxJunkDepth bounds how deep remove descends into a directory that
// something other than the driver left inside a lock directory.
const maxJunkDepth = 16

// removeAt removes name inside h, descending at most depth levels.
func removeAt(h *dirHandle, name string, depth int) error {
	err := unix.Unlinkat(h.fd, name, 0)
	if err == nil {
		return nil
	}
	if !errors.Is(err, unix.EISDIR) && !errors.Is(err, unix.EPERM) || depth == 0 {
		return h.pathErr("unlinkat", name, err)
	}
	fd, err := retry(func() (int, error) {
		return unix.Openat(h.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	})
	if err != nil {
		return h.pathErr("open", name, err)
	}
	sub := &dirHandle{path: h.path + "/" + name, fd: fd}
	names, err := sub.names()
	for _, n := range names {
		if err == nil {
			err = removeAt(sub, n, depth-1)
		}
	}
	sub.close()
	if err != nil {
		return err
	}
	if err := unix.Unlinkat(h.fd, name, unix.AT_REMOVEDIR); err != nil {
		return h.pathErr("rmdir", name, err)
	}
	return nil
}

// sameAs reports whether path names this directory.
func (h *dirHandle) sameAs(path string) (bool, error) {
	var mine, there unix.Stat_t
	if err := unix.Fstat(h.fd, &mine); err != nil {
		return false, &fs.PathError{Op: "fstat", Path: h.path, Err: goneErr(err)}
	}
	if err := unix.Lstat(path, &there); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, nil
		}
		return false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return mine.Dev == there.Dev && mine.Ino == there.Ino, nil
}

// pathErr wraps err with the path of name inside the directory.
func (h *dirHandle) pathErr(op, name string, err error) error {
	return &fs.PathError{Op: op, Path: h.path + "/" + name, Err: goneErr(err)}
}

// goneErr reports a directory that has been removed the same way on every
// filesystem: a local one says ENOENT, but an NFS client whose handle names
// a directory removed on the server says ESTALE.
func goneErr(err error) error {
	if errors.Is(err, unix.ESTALE) {
		return unix.ENOENT
	}
	return err
}

// writeNew creates the file path, which must not exist, holding data.
func writeNew(path string, data []byte) error {
	fd, err := retry(func() (int, error) {
		return unix.Open(path, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, filePerm)
	})
	if err != nil {
		return &fs.PathError{Op: "open", Path: path, Err: err}
	}
	for len(data) > 0 && err == nil {
		var n int
		n, err = retry(func() (int, error) { return unix.Write(fd, data) })
		data = data[n:]
	}
	if cerr := unix.Close(fd); err == nil {
		err = cerr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

// retry repeats a system call interrupted by a signal.
func retry(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		if !errors.Is(err, syscall.EINTR) {
			return n, err
		}
	}
}
