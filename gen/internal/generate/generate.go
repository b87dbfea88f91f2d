// Package generate runs the pipeline spec → model → emitters and compares
// the result with the tree: it is what lockgen's main and the generator's
// tests share.
package generate

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/zerotal/lock/gen/internal/cabi"
	"github.com/zerotal/lock/gen/internal/emitc"
	"github.com/zerotal/lock/gen/internal/emitcgo"
	"github.com/zerotal/lock/gen/internal/emitgo"
	"github.com/zerotal/lock/gen/internal/emitnode"
	"github.com/zerotal/lock/gen/internal/emitpy"
	"github.com/zerotal/lock/gen/internal/load"
	"github.com/zerotal/lock/gen/internal/model"
)

// SpecDir is the spec's directory, relative to the repository root.
const SpecDir = "spec"

// Files are generated files, keyed by slash-separated path relative to the
// repository root.
type Files map[string][]byte

// Paths returns the files' paths, sorted.
func (fs Files) Paths() []string {
	ps := make([]string, 0, len(fs))
	for p := range fs {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

// Layout says where the generated files go.
type Layout struct {
	Go      emitgo.Layout
	CShared string // the C ABI's directory: its cgo exports and public header
	Python  string // the Python client's directory, holding one package
	Node    string // the Node.js package's directory
}

// DefaultLayout is the repository's layout.
func DefaultLayout() Layout {
	return Layout{Go: emitgo.DefaultLayout(), CShared: "sdk/cshared", Python: "sdk/python", Node: "sdk/node"}
}

// FromSpec loads the spec in specDir and emits every file for layout l:
// the Go API, and the C ABI (header, cgo exports, Python module, Node.js
// binding) when the spec declares one.
func FromSpec(specDir string, l Layout) (Files, error) {
	s, err := load.Dir(specDir)
	if err != nil {
		return nil, err
	}
	m, err := model.Build(s)
	if err != nil {
		return nil, fmt.Errorf("spec %s:\n%w", specDir, err)
	}
	files, err := emitgo.Emit(m, l.Go)
	if err != nil {
		return nil, err
	}
	a, err := cabi.Lower(m)
	if err != nil || a == nil {
		return Files(files), err
	}
	exports, err := emitcgo.Emit(a, m, emitcgo.Target{Dir: l.CShared, SDK: l.Go.SDK.Path, SDKPkg: l.Go.SDK.Name})
	if err != nil {
		return nil, err
	}
	for p, b := range exports {
		files[p] = b
	}
	files[path.Join(l.CShared, emitc.FileName(a))] = emitc.Emit(a)
	files[emitpy.Path(l.Python, a)] = emitpy.Emit(a)
	for p, b := range emitnode.Emit(l.Node, a) {
		files[p] = b
	}
	return Files(files), nil
}

// Repo generates the files of the repository rooted at root.
func Repo(root string) (Files, error) {
	return FromSpec(filepath.Join(root, SpecDir), DefaultLayout())
}

// Change is a difference between the generated files and the tree.
type Change struct {
	Path   string // slash-separated, relative to the root
	Action string // "create", "update" or "delete"
	Detail string // for an update, where the contents first differ
}

// String renders the change as lockgen prints it: "update sdk/go/x_gen.go: ...".
func (c Change) String() string {
	if c.Detail != "" {
		return fmt.Sprintf("%s %s: %s", c.Action, c.Path, c.Detail)
	}
	return c.Action + " " + c.Path
}

// Diff compares files with the tree at root: files to create or update, and
// stale generated files (a *_gen.go carrying our header in a directory we
// generate into) to delete.
func Diff(root string, files Files) ([]Change, error) {
	var changes []Change
	dirs := map[string]bool{}
	for _, p := range files.Paths() {
		dirs[path.Dir(p)] = true
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case errors.Is(err, fs.ErrNotExist):
			changes = append(changes, Change{Path: p, Action: "create"})
		case err != nil:
			return nil, err
		case !bytes.Equal(old, files[p]):
			changes = append(changes, Change{Path: p, Action: "update", Detail: firstDifference(old, files[p])})
		}
	}
	stale, err := staleFiles(root, dirs, files)
	if err != nil {
		return nil, err
	}
	for _, p := range stale {
		changes = append(changes, Change{Path: p, Action: "delete"})
	}
	return changes, nil
}

// staleHeaders are the first lines of generated files, by file-name suffix:
// a file so named and so headed in a directory the generator writes into is
// generated, and stale when the generator no longer emits it.
var staleHeaders = map[string]string{
	"_gen.go":   "// " + emitgo.Header + "\n",
	"_gen.py":   emitpy.Header + "\n",
	"_gen.js":   emitnode.Header + "\n",
	"_gen.d.ts": emitnode.Header + "\n",
}

// staleFiles lists generated files in dirs that the generator no longer
// emits.
func staleFiles(root string, dirs map[string]bool, files Files) ([]string, error) {
	var stale []string
	for dir := range dirs {
		entries, err := os.ReadDir(filepath.Join(root, filepath.FromSlash(dir)))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		for _, ent := range entries {
			p := path.Join(dir, ent.Name())
			header := ""
			for suffix, h := range staleHeaders {
				if strings.HasSuffix(p, suffix) {
					header = h
				}
			}
			if ent.IsDir() || header == "" || files[p] != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				return nil, err
			}
			if bytes.HasPrefix(b, []byte(header)) {
				stale = append(stale, p)
			}
		}
	}
	sort.Strings(stale)
	return stale, nil
}

// firstDifference describes the first line where two files differ.
func firstDifference(old, new []byte) string {
	ol, nl := strings.Split(string(old), "\n"), strings.Split(string(new), "\n")
	for i := 0; i < len(ol) || i < len(nl); i++ {
		var o, n string
		if i < len(ol) {
			o = ol[i]
		}
		if i < len(nl) {
			n = nl[i]
		}
		if o != n || i >= len(ol) || i >= len(nl) {
			return fmt.Sprintf("line %d: have %q, want %q", i+1, o, n)
		}
	}
	return "contents differ"
}

// Apply makes the tree at root match changes: it writes created and
// updated files and removes stale ones.
func Apply(root string, files Files, changes []Change) error {
	for _, c := range changes {
		p := filepath.Join(root, filepath.FromSlash(c.Path))
		switch c.Action {
		case "delete":
			if err := os.Remove(p); err != nil {
				return err
			}
		default:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(p, files[c.Path], 0o644); err != nil {
				return err
			}
		}
	}
	return nil
}
