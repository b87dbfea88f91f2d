package model

import (
	"fmt"
	"go/ast"
	"strconv"
	"strings"
	"time"
)

// buildOptionSet reads a //lock:options struct. The option type it names is
// linked later, since it may be declared after the set.
func (b *builder) buildOptionSet(d typeDecl, st *ast.StructType) {
	pkg := b.api
	n, ds := b.named(pkg, d.spec.Name, d.doc)
	o := OptionSet{Named: n}
	o.Option.Name, _ = ds.take("options")
	if into, ok := ds.take("into"); ok {
		if !isIdent(into) || into != lowerFirst(into) {
			b.errorf(pkg, d.spec.Pos(), "%s: //lock:into wants the name of an unexported struct written by hand, got %q", n.Name, into)
		}
		o.Into = into
	}
	b.done(pkg, d.spec.Pos(), ds)
	fields, fieldTags := b.fields(pkg, st, n.Name, true)
	bools := map[string]bool{}
	for _, f := range fields {
		bools[f.Name] = f.Type.Kind == Bool
	}
	for i, f := range fields {
		t := fieldTags[i]
		where := n.Name + "." + f.Name
		of := OptionField{Named: f.Named, Type: f.Type, Set: t.take("set"), Join: t.take("join")}
		if implies := t.take("implies"); implies != "" {
			of.Implies = strings.Fields(implies)
		}
		def, err := parseDefault(t.take("default"), f.Type.Kind)
		if err != nil {
			b.errorf(pkg, d.spec.Pos(), "%s: %v", where, err)
		}
		of.Default = def
		if err := t.done(); err != nil {
			b.errorf(pkg, d.spec.Pos(), "%s: %v", where, err)
		}
		switch k := f.Type.Kind; {
		case k == Duration, k == Bool, k == String:
		case k == Declared, k == Pointer && f.Type.Elem.Kind == Extern: // Declared: a //lock:go type, which link checks
			if !def.IsZero() {
				b.errorf(pkg, d.spec.Pos(), "%s: a Go-only option defaults to its zero value; drop default:", where)
			}
		default:
			b.errorf(pkg, d.spec.Pos(), "%s: options are durations, booleans or strings, or (Go-only) a //lock:go type or a pointer to another package's type", where)
		}
		if of.Join != "" && (!isIdent(of.Join) || of.Join != lowerFirst(of.Join)) {
			b.errorf(pkg, d.spec.Pos(), "%s: join: wants the name of an unexported func(old, new T) T written by hand, got %q", where, of.Join)
		}
		if of.Set != "" && o.Into == "" {
			b.errorf(pkg, d.spec.Pos(), "%s: set: names a field of the //lock:into struct, and there is none", where)
		}
		for _, imp := range of.Implies {
			if !bools[imp] {
				b.errorf(pkg, d.spec.Pos(), "%s: implies %s, which is not a bool option of %s", where, imp, n.Name)
			}
		}
		if o.Into == "" && (def.TTLDiv > 0) {
			b.errorf(pkg, d.spec.Pos(), "%s: a TTL-relative default needs the engine: use //lock:into", where)
		}
		o.Fields = append(o.Fields, of)
	}
	b.m.Options = append(b.m.Options, o)
}

// isGoType reports whether name is declared //lock:go.
func (b *builder) isGoType(name string) bool {
	for _, g := range b.m.GoTypes {
		if g.Name == name {
			return true
		}
	}
	return false
}

// parseDefault reads an option's default tag: "ttl", "ttl/N", a duration,
// or a string.
func parseDefault(s string, k Kind) (Default, error) {
	if s == "" {
		return Default{}, nil
	}
	if k == Duration {
		if s == "ttl" {
			return Default{TTLDiv: 1}, nil
		}
		if div, ok := strings.CutPrefix(s, "ttl/"); ok {
			n, err := strconv.Atoi(div)
			if err != nil || n < 2 {
				return Default{}, fmt.Errorf("default:%q wants ttl/N with N >= 2", s)
			}
			return Default{TTLDiv: n}, nil
		}
		d, err := time.ParseDuration(s)
		if err != nil {
			return Default{}, fmt.Errorf("default:%q is neither ttl, ttl/N nor a duration", s)
		}
		return Default{Literal: s, Duration: d}, nil
	}
	if k == Bool {
		return Default{}, fmt.Errorf("a bool option defaults to false; drop default:%q", s)
	}
	return Default{Literal: s}, nil
}
