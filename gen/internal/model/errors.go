package model

import (
	"fmt"
	"go/ast"
	"go/token"
	"strings"
)

// buildCodes reads the error table and the typed errors it names.
func (b *builder) buildCodes(d typeDecl) {
	pkg := b.api
	st := d.spec.Type.(*ast.StructType)
	// The table's doc explains the spec; the Code type carries the generated doc.
	_, ds := b.named(pkg, d.spec.Name, d.doc)
	b.done(pkg, d.spec.Pos(), ds)
	fields, fieldTags := b.fields(pkg, st, codesName, true)
	fallbacks := 0
	for i, f := range fields {
		t := fieldTags[i]
		pos := d.spec.Pos()
		if f.Type.Kind != Declared || f.Type.Name != codeName {
			b.errorf(pkg, pos, "%s.%s: must have type %s", codesName, f.Name, codeName)
		}
		c := Code{Named: f.Named}
		var err error
		if c.Value, err = t.takeIntRequired("code"); err != nil {
			b.errorf(pkg, pos, "%s.%s: %v", codesName, f.Name, err)
		}
		if c.HTTP, err = t.takeIntRequired("http"); err != nil {
			b.errorf(pkg, pos, "%s.%s: %v", codesName, f.Name, err)
		}
		if c.Rank, err = t.takeInt("rank"); err != nil {
			b.errorf(pkg, pos, "%s.%s: %v", codesName, f.Name, err)
		}
		c.Sentinel, c.Message, c.Error, c.Text = t.take("sentinel"), t.take("message"), t.take("error"), t.take("text")
		if is := t.take("is"); is != "" {
			path, name, ok := strings.Cut(is, ".")
			if !ok || path == "" || name == "" {
				b.errorf(pkg, pos, "%s.%s: is:%q wants pkg.Name", codesName, f.Name, is)
			}
			c.Is = &Ref{Path: path, Name: name}
		}
		switch fb := t.take("fallback"); fb {
		case "":
		case "true":
			c.Fallback = true
			fallbacks++
		default:
			b.errorf(pkg, pos, "%s.%s: fallback:%q wants \"true\"", codesName, f.Name, fb)
		}
		if err := t.done(); err != nil {
			b.errorf(pkg, pos, "%s.%s: %v", codesName, f.Name, err)
		}
		b.checkCode(c, i, pos)
		b.m.Codes = append(b.m.Codes, c)
	}
	if fallbacks != 1 {
		b.errorf(pkg, d.spec.Pos(), "%s: exactly one code must be the fallback, found %d", codesName, fallbacks)
	}
	b.buildErrorTypes()
}

// checkCode checks one row against the rows before it.
func (b *builder) checkCode(c Code, i int, pos token.Pos) {
	pkg := b.api
	where := codesName + "." + c.Name
	if i == 0 && c.Value != 0 {
		b.errorf(pkg, pos, "%s: the first code must be 0 (success)", where)
	}
	if i > 0 && c.Value <= b.m.Codes[i-1].Value {
		b.errorf(pkg, pos, "%s: codes must increase: %d after %d", where, c.Value, b.m.Codes[i-1].Value)
	}
	if c.HTTP < 100 || c.HTTP > 599 {
		b.errorf(pkg, pos, "%s: http:%d is not an HTTP status", where, c.HTTP)
	}
	if (c.Sentinel == "") != (c.Message == "") {
		b.errorf(pkg, pos, "%s: sentinel and message go together", where)
	}
	if c.Sentinel != "" && !strings.HasPrefix(c.Sentinel, "Err") {
		b.errorf(pkg, pos, "%s: sentinel names start with Err", where)
	}
	matched := c.Sentinel != "" || c.Error != "" || c.Is != nil
	if matched != (c.Rank > 0) {
		b.errorf(pkg, pos, "%s: a code matched by sentinel, error or is needs a rank > 0, and only such a code", where)
	}
	if c.Fallback && matched {
		b.errorf(pkg, pos, "%s: the fallback code is not matched by anything", where)
	}
}

// buildErrorTypes reads the typed errors, now that the table says which
// code each has.
func (b *builder) buildErrorTypes() {
	pkg := b.api
	codeOf := map[string]string{}
	for _, c := range b.m.Codes {
		if c.Error != "" {
			codeOf[c.Error] = c.Name
		}
	}
	for _, d := range b.errDecls {
		name := d.spec.Name.Name
		n, ds := b.named(pkg, d.spec.Name, d.doc)
		e := ErrorType{Named: n, Code: codeOf[name]}
		delete(codeOf, name)
		if e.Code == "" {
			b.errorf(pkg, d.spec.Pos(), "%s: no code of %s names it", name, codesName)
		}
		var ts []tags
		e.Fields, ts = b.fields(pkg, b.errTypes[name], name, false)
		for i, f := range e.Fields {
			if err := ts[i].done(); err != nil {
				b.errorf(pkg, d.spec.Pos(), "%s.%s: %v", name, f.Name, err)
			}
			if f.Type.Kind == Error {
				if e.Unwrap != "" {
					b.errorf(pkg, d.spec.Pos(), "%s: two error fields (%s, %s); Unwrap returns one", name, e.Unwrap, f.Name)
				}
				e.Unwrap = f.Name
			}
		}
		format, ok := ds.take("format")
		_, e.Input = ds.take("input")
		b.done(pkg, d.spec.Pos(), ds)
		if e.Input {
			b.checkInputError(e, d.spec.Pos())
		}
		if !ok {
			b.errorf(pkg, d.spec.Pos(), "%s: missing //lock:format message template", name)
		}
		var err error
		if e.Format, err = parseFormat(format); err != nil {
			b.errorf(pkg, d.spec.Pos(), "%s: %v", name, err)
		}
		b.checkFormat(e, d.spec.Pos())
		b.m.Errors = append(b.m.Errors, e)
	}
	for typ, code := range codeOf {
		b.errorf(pkg, 0, "%s.%s: error:%q is not declared", codesName, code, typ)
	}
}

// checkInputError checks the error marked //lock:input: generated code
// fills its string fields Field and Reason, and there is only one.
func (b *builder) checkInputError(e ErrorType, pos token.Pos) {
	for _, other := range b.m.Errors {
		if other.Input {
			b.errorf(b.api, pos, "%s: //lock:input is already on %s", e.Name, other.Name)
		}
	}
	have := map[string]bool{}
	for _, f := range e.Fields {
		have[f.Name] = f.Type.Kind == String
	}
	if !have["Field"] || !have["Reason"] {
		b.errorf(b.api, pos, "%s: the //lock:input error needs string fields Field and Reason", e.Name)
	}
}

// checkFormat checks that a message mentions real fields, and guards with
// fields that have a zero value to test.
func (b *builder) checkFormat(e ErrorType, pos token.Pos) {
	kinds := map[string]Kind{}
	for _, f := range e.Fields {
		kinds[f.Name] = f.Type.Kind
	}
	for _, p := range e.Format {
		for _, name := range []string{p.Field, p.Guard} {
			if name == "" {
				continue
			}
			k, ok := kinds[name]
			switch {
			case !ok:
				b.errorf(b.api, pos, "%s: format mentions %s, which is not a field", e.Name, name)
			case name == p.Guard && !zeroTestable(k):
				b.errorf(b.api, pos, "%s: format guards with %s, whose type has no zero test", e.Name, name)
			}
		}
	}
}

// zeroTestable reports whether emitters know how to test a kind for its
// zero value.
func zeroTestable(k Kind) bool {
	switch k {
	case Bool, Int, Uint64, String, Duration, Time, Error, Any:
		return true
	}
	return false
}

// takeIntRequired is takeInt for a key that must be present.
func (ts tags) takeIntRequired(key string) (int, error) {
	if _, ok := ts[key]; !ok {
		return 0, fmt.Errorf("missing tag %s", key)
	}
	return ts.takeInt(key)
}
