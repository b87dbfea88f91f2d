package model

import (
	"fmt"
	"go/ast"
	"strings"
)

// directivePrefix starts the spec's directives. go/ast treats "//lock:..."
// lines as directives, so CommentGroup.Text leaves them out of the doc.
const directivePrefix = "//lock:"

// directives are the //lock: lines of one doc comment, by name.
type directives map[string]string

// parseDoc splits a doc comment into its text and its //lock: directives.
// A directive may appear once per comment.
func parseDoc(cg *ast.CommentGroup) (string, directives, error) {
	if cg == nil {
		return "", directives{}, nil
	}
	ds := directives{}
	for _, c := range cg.List {
		rest, ok := strings.CutPrefix(c.Text, directivePrefix)
		if !ok {
			continue
		}
		name, arg, _ := strings.Cut(rest, " ")
		if _, dup := ds[name]; dup {
			return "", nil, fmt.Errorf("directive //lock:%s repeated", name)
		}
		ds[name] = strings.TrimSpace(arg)
	}
	return strings.TrimRight(cg.Text(), "\n"), ds, nil
}

// take removes and returns directive name, reporting whether it was there.
func (ds directives) take(name string) (string, bool) {
	v, ok := ds[name]
	delete(ds, name)
	return v, ok
}

// done fails on any directive nobody took: a typo must not pass silently.
func (ds directives) done() error {
	for name := range ds {
		return fmt.Errorf("unknown directive //lock:%s", name)
	}
	return nil
}
