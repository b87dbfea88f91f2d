package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"time"

	gomodule "golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// writeProxy writes a module proxy into dir (for GOPROXY=file://dir) that
// serves every published module of r at r.version, made from the working
// tree as the tags would make them: the files git tracks in each module's
// directory, packed by x/mod/zip, which applies the go command's own rules
// (no nested modules, no vendor directories, valid file names).
func writeProxy(r *repo, dir string) error {
	tracked, err := trackedFiles(r.root)
	if err != nil {
		return err
	}
	for _, m := range r.modules {
		if !m.published() {
			continue
		}
		if err := writeModule(r, m, tracked, dir); err != nil {
			return fmt.Errorf("%s: %w", m.Path, err)
		}
	}
	return nil
}

// writeModule writes one module's list, .info, .mod and .zip.
func writeModule(r *repo, m module, tracked []string, proxy string) error {
	escaped, err := gomodule.EscapePath(m.Path)
	if err != nil {
		return err
	}
	base := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
	if err := os.MkdirAll(base, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(m.Dir), "go.mod"))
	if err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{r.version, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		return err
	}
	var files []zip.File
	prefix := m.Dir + "/"
	for _, f := range tracked {
		if strings.HasPrefix(f, prefix) {
			files = append(files, diskFile{root: r.root, path: f, rel: strings.TrimPrefix(f, prefix)})
		}
	}
	var z bytes.Buffer
	if err := zip.Create(&z, gomodule.Version{Path: m.Path, Version: r.version}, files); err != nil {
		return err
	}
	for name, data := range map[string][]byte{
		"list":              []byte(r.version + "\n"),
		r.version + ".info": info,
		r.version + ".mod":  gomod,
		r.version + ".zip":  z.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(base, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// trackedFiles lists the files git tracks under root, slash-separated.
func trackedFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "-z")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files: %w", err)
	}
	var files []string
	for _, f := range strings.Split(string(out), "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// diskFile is a tracked file as the working tree has it now.
type diskFile struct {
	root, path, rel string
}

func (f diskFile) Path() string { return f.rel }

func (f diskFile) Lstat() (os.FileInfo, error) {
	return os.Lstat(filepath.Join(f.root, filepath.FromSlash(f.path)))
}

func (f diskFile) Open() (io.ReadCloser, error) {
	return os.Open(filepath.Join(f.root, filepath.FromSlash(f.path)))
}

// proxyURL is the GOPROXY entry of a proxy written into dir.
func proxyURL(dir string) string {
	return "file://" + path.Clean(filepath.ToSlash(dir))
}
