package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// modulePrefix starts the path of every module of the repository.
const modulePrefix = "github.com/zerotal/lock/"

// module is one module of the repository.
type module struct {
	Path string // module path
	Dir  string // directory, relative to the repository root, slash-separated
}

// Tag is the git tag that publishes m at version: "sdk/go/v0.1.0" for the
// module in sdk/go, as the go command finds a module in a subdirectory.
func (m module) Tag(version string) string { return m.Dir + "/" + version }

// published reports whether users get m: every module of go.work but the
// generator, the spec and the benchmarks, which are the repository's own
// tools.
func (m module) published() bool {
	switch m.Dir {
	case "gen", "spec", "tools/bench", "tools/release":
		return false
	}
	return true
}

// repo is the repository: its root, its modules (from go.work) and the
// version they are released at together (the file VERSION).
type repo struct {
	root    string
	version string
	modules []module
}

// loadRepo reads the repository at root.
func loadRepo(root string) (*repo, error) {
	v, err := os.ReadFile(filepath.Join(root, "VERSION"))
	if err != nil {
		return nil, err
	}
	r := &repo{root: root, version: strings.TrimSpace(string(v))}
	if !validVersion(r.version) {
		return nil, fmt.Errorf("VERSION holds %q, not a release version vX.Y.Z", r.version)
	}
	data, err := os.ReadFile(filepath.Join(root, "go.work"))
	if err != nil {
		return nil, err
	}
	work, err := modfile.ParseWork("go.work", data, nil)
	if err != nil {
		return nil, err
	}
	for _, u := range work.Use {
		dir := filepath.ToSlash(filepath.Clean(u.Path))
		gomod, err := os.ReadFile(filepath.Join(root, dir, "go.mod"))
		if err != nil {
			return nil, err
		}
		path := modfile.ModulePath(gomod)
		if !strings.HasPrefix(path, modulePrefix) || path != modulePrefix+dir {
			return nil, fmt.Errorf("%s: module %q is not %s%s: the go command would not find it in its directory", dir, path, modulePrefix, dir)
		}
		r.modules = append(r.modules, module{Path: path, Dir: dir})
	}
	slices.SortFunc(r.modules, func(a, b module) int { return strings.Compare(a.Dir, b.Dir) })
	return r, nil
}

// validVersion reports whether v is vMAJOR.MINOR.PATCH.
func validVersion(v string) bool {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if !strings.HasPrefix(v, "v") || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" || len(p) > 1 && p[0] == '0' {
			return false
		}
	}
	return true
}

// isSibling reports whether path is a module of the repository.
func (r *repo) isSibling(path string) bool {
	for _, m := range r.modules {
		if m.Path == path {
			return true
		}
	}
	return false
}
