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

	"github.com/zerotal/lock/gen/internal/emitgo"
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

// FromSpec loads the spec in specDir and emits every file for layout l.
func FromSpec(specDir string, l emitgo.Layout) (Files, error) {
	s, err := load.Dir(specDir)
	if err != nil {
		return nil, err
	}
	m, err := model.Build(s)
	if err != nil {
		return nil, fmt.Errorf("spec %s:\n%w", specDir, err)
	}
	files, err := emitgo.Emit(m, l)
	if err != nil {
		return nil, err
	}
	return Files(files), nil
}

// Repo generates the files of the repository rooted at root.
func Repo(root string) (Files, error) {
	return FromSpec(filepath.Join(root, SpecDir), emitgo.DefaultLayout())
}

// Change is a difference between the generated files and the tree.
type Change struct {
	Path   string // slash-separated, relative to the root
	Action string // "create", "update" or "delete"
	Detail string // for an update, where the contents first differ
}

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
			if ent.IsDir() || !strings.HasSuffix(p, "_gen.go") || files[p] != nil {
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
			if err != nil {
				return nil, err
			}
			if bytes.HasPrefix(b, []byte("// "+emitgo.Header+"\n")) {
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
