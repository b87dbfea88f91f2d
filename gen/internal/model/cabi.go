package model

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// ABI is the C ABI's own part of the spec: the interface marked
// //lock:abi LIBRARY PREFIX VERSION, whose methods are the functions only
// the C ABI has (versions, error detail, handle lifetime). The rest of the
// C ABI is the API's methods, each marked //lock:c.
type ABI struct {
	Named
	Library string   // the library's name: lib<Library>.so, <Library>.h, the Python package
	Prefix  string   // the prefix of every C name ("zl": zl_open, ZL_OK, zl_options)
	Version int      // the ABI version: raised whenever a signature changes incompatibly
	Methods []Method // in spec order; all written by hand in the C ABI's package, all with a C binding
}

// Ownership says who owns a string a C function returns.
type Ownership int

// The ownerships of a returned string.
const (
	// CallerBuffer: the string is copied into a buffer the caller passes,
	// with the size protocol (char *buf, size_t *len).
	CallerBuffer Ownership = iota
	// Static: the library returns a pointer to a string that lives as long
	// as the process and must not be freed.
	Static
	// ThreadLocal: the library returns a pointer to a per-thread buffer,
	// valid until the next call on the same thread.
	ThreadLocal
)

// CBinding says how a method appears in the C ABI: directive
//
//	//lock:c NAME [out=NAME] [static|thread] [frees] [options=Field,Field]
//
// or //lock:c - WHY for a method that has no C form.
type CBinding struct {
	Name    string    // the C function; "" when the method is not in the C ABI
	Skip    string    // why the method is not in the C ABI; "" when it is
	Out     string    // the out-parameter that receives the result; default "out"
	String  Ownership // who owns a returned string
	Frees   bool      // the call ends the life of its handle (close, free)
	Flatten []string  // option fields passed as parameters instead of an options struct
}

// Present reports whether the method has a //lock:c directive at all.
func (c CBinding) Present() bool { return c.Name != "" || c.Skip != "" }

var cIdent = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// cBinding reads a method's //lock:c directive.
func (b *builder) cBinding(ds directives, pos token.Pos, m Method) CBinding {
	arg, ok := ds.take("c")
	if !ok {
		return CBinding{}
	}
	where := m.Name + ": //lock:c"
	words := strings.Fields(arg)
	if len(words) == 0 {
		b.errorf(b.api, pos, "%s wants a C name, or - and the reason the method has none", where)
		return CBinding{}
	}
	if words[0] == "-" {
		why := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(arg), "-"))
		if why == "" {
			b.errorf(b.api, pos, "%s -: say why the method has no C form", where)
			why = "?"
		}
		return CBinding{Skip: why}
	}
	c := CBinding{Name: words[0], Out: "out"}
	if !cIdent.MatchString(c.Name) {
		b.errorf(b.api, pos, "%s: %q is not a lower-case C identifier", where, c.Name)
	}
	owners := 0
	for _, w := range words[1:] {
		key, val, hasVal := cutWord(w)
		switch {
		case key == "out" && hasVal && cIdent.MatchString(val):
			c.Out = val
		case key == "static" && !hasVal:
			c.String, owners = Static, owners+1
		case key == "thread" && !hasVal:
			c.String, owners = ThreadLocal, owners+1
		case key == "frees" && !hasVal:
			c.Frees = true
		case key == "options" && hasVal:
			c.Flatten = splitList(val)
		default:
			b.errorf(b.api, pos, "%s: unknown or malformed word %q (want out=name, static, thread, frees, options=A,B)", where, w)
		}
	}
	if owners > 1 {
		b.errorf(b.api, pos, "%s: static and thread exclude each other", where)
	}
	return c
}

func cutWord(w string) (key, val string, hasVal bool) {
	key, val, hasVal = strings.Cut(w, "=")
	return key, val, hasVal
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// buildABI reads the //lock:abi interface.
func (b *builder) buildABI(d typeDecl, it *ast.InterfaceType, n Named, args string) {
	pkg := b.api
	if b.m.ABI != nil {
		b.errorf(pkg, d.spec.Pos(), "%s: a second //lock:abi interface (first: %s)", n.Name, b.m.ABI.Name)
		return
	}
	a := &ABI{Named: n}
	words := strings.Fields(args)
	var err error
	if len(words) == 3 {
		a.Library, a.Prefix = words[0], words[1]
		a.Version, err = strconv.Atoi(words[2])
	}
	if len(words) != 3 || err != nil || a.Version < 1 || !cIdent.MatchString(a.Library) || !cIdent.MatchString(a.Prefix) {
		b.errorf(pkg, d.spec.Pos(), "%s: //lock:abi wants LIBRARY PREFIX VERSION (lower-case C names, version >= 1), got %q", n.Name, args)
	}
	for _, f := range it.Methods.List {
		if len(f.Names) == 0 {
			b.errorf(pkg, f.Pos(), "%s: embedded interfaces are not supported", n.Name)
			continue
		}
		mn, mds := b.named(pkg, f.Names[0], f.Doc)
		m, ok := b.method(pkg, f.Names[0], mn)
		if !ok {
			continue
		}
		m.Kind, m.Impl, m.ABIOnly = Forward, m.Name, true
		m.C = b.cBinding(mds, f.Pos(), m)
		b.done(pkg, f.Pos(), mds)
		if m.C.Name == "" {
			b.errorf(pkg, f.Pos(), "%s.%s: every function of the //lock:abi interface needs //lock:c NAME", n.Name, m.Name)
		}
		a.Methods = append(a.Methods, m)
	}
	b.m.ABI = a
}

// linkABI checks the C bindings once every surface is known: with a
// //lock:abi interface, every API method says whether and how it is in the
// C ABI, so a method added to the spec cannot silently miss the C ABI;
// without one, no //lock:c may appear.
func (b *builder) linkABI() {
	type owned struct {
		where string
		c     CBinding
		m     Method
	}
	var all []owned
	for _, s := range append([]Surface{b.m.Package}, b.m.Surfaces...) {
		for _, m := range s.Methods {
			all = append(all, owned{s.Name + "." + m.Name, m.C, m})
		}
	}
	if b.m.ABI == nil {
		for _, o := range all {
			if o.c.Present() {
				b.errs = append(b.errs, fmt.Errorf("%s: //lock:c without a //lock:abi interface", o.where))
			}
		}
		for _, s := range b.m.Surfaces {
			if s.CHandle != "" {
				b.errs = append(b.errs, fmt.Errorf("%s: //lock:c without a //lock:abi interface", s.Name))
			}
		}
		return
	}
	a := b.m.ABI
	for _, m := range a.Methods {
		all = append(all, owned{a.Name + "." + m.Name, m.C, m})
	}
	names := map[string]string{}
	prefix := a.Prefix + "_"
	for _, s := range b.m.Surfaces {
		switch {
		case s.CHandle == "":
			b.errs = append(b.errs, fmt.Errorf("%s: with a //lock:abi interface, every API type needs //lock:c HANDLE_TYPE", s.Name))
		case !strings.HasPrefix(s.CHandle, prefix) || !cIdent.MatchString(s.CHandle):
			b.errs = append(b.errs, fmt.Errorf("%s: handle type %q must be a lower-case C name starting with %s", s.Name, s.CHandle, prefix))
		}
		b.claimCName(names, s.CHandle, s.Name)
	}
	if b.m.Package.CHandle != "" {
		b.errs = append(b.errs, fmt.Errorf("%s: the package surface has no handles: drop its //lock:c", b.m.Package.Name))
	}
	for _, o := range all {
		if !o.c.Present() {
			b.errs = append(b.errs, fmt.Errorf("%s: with a //lock:abi interface, every method needs //lock:c NAME or //lock:c - WHY", o.where))
			continue
		}
		if o.c.Name == "" {
			continue
		}
		if !strings.HasPrefix(o.c.Name, prefix) {
			b.errs = append(b.errs, fmt.Errorf("%s: C name %q must start with %s", o.where, o.c.Name, prefix))
		}
		b.claimCName(names, o.c.Name, o.where)
		b.checkCBinding(o.where, o.m)
	}
}

// claimCName fails on a C name used twice.
func (b *builder) claimCName(names map[string]string, name, where string) {
	if name == "" {
		return
	}
	if first, dup := names[name]; dup {
		b.errs = append(b.errs, fmt.Errorf("%s: C name %s is already used by %s", where, name, first))
	}
	names[name] = where
}

// checkCBinding checks that a binding's words fit the method's signature.
func (b *builder) checkCBinding(where string, m Method) {
	c := m.C
	var value []Param // results other than the error
	for _, r := range m.Results {
		if r.Type.Kind != Error {
			value = append(value, r)
		}
	}
	if len(value) > 1 {
		b.errs = append(b.errs, fmt.Errorf("%s: a C function returns at most one value besides its code; this has %d", where, len(value)))
	}
	isString := len(value) == 1 && value[0].Type.Kind == String
	if c.String != CallerBuffer && !isString {
		b.errs = append(b.errs, fmt.Errorf("%s: static and thread describe a returned string, and this returns none", where))
	}
	if c.Frees && (len(m.Params) == 0 || m.Params[0].Type.Kind != Declared) && m.ABIOnly {
		b.errs = append(b.errs, fmt.Errorf("%s: frees ends a handle: the function's first parameter must be one", where))
	}
	if len(c.Flatten) == 0 {
		return
	}
	if !m.Variadic {
		b.errs = append(b.errs, fmt.Errorf("%s: options= flattens variadic options, and this takes none", where))
		return
	}
	opt := m.Params[len(m.Params)-1].Type.Name
	for _, set := range b.m.Options {
		if set.Option.Name != opt {
			continue
		}
		for _, name := range c.Flatten {
			found := false
			for _, f := range set.Fields {
				found = found || f.Name == name
			}
			if !found {
				b.errs = append(b.errs, fmt.Errorf("%s: options=%s: %s has no field %s", where, strings.Join(c.Flatten, ","), set.Name, name))
			}
		}
	}
}
