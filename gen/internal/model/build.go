package model

import (
	"errors"
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"strings"

	"golang.org/x/tools/go/packages"

	"github.com/zerotal/lock/gen/internal/load"
)

// Names the spec gives a role by convention rather than by directive.
const (
	codesName   = "Codes" // the error table
	codeName    = "Code"  // the error code type
	errorSuffix = "Error" // typed errors
)

// Build resolves a loaded spec into a Model, checking it as it goes: every
// problem is reported, with its position, and any problem means no model.
func Build(s *load.Spec) (*Model, error) {
	b := &builder{
		api:      s.API,
		contract: s.Contract,
		m:        &Model{},
		errTypes: map[string]*ast.StructType{},
		roles:    map[string]bool{},
	}
	b.buildAPI()
	b.buildContract()
	b.link()
	if len(b.errs) > 0 {
		return nil, errors.Join(b.errs...)
	}
	return b.m, nil
}

type builder struct {
	api, contract *packages.Package
	m             *Model
	errs          []error

	errTypes   map[string]*ast.StructType // typed errors, until the table links them
	errDecls   []typeDecl                 // the same, in spec order
	optionDecl map[string]typeDecl        // option types (Option, ManagerOption) by name
	roles      map[string]bool            // API declarations given a role
}

// typeDecl is one type declaration with its doc comment.
type typeDecl struct {
	spec *ast.TypeSpec
	doc  *ast.CommentGroup
}

func (b *builder) errorf(pkg *packages.Package, pos token.Pos, format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%s: %s", pkg.Fset.Position(pos), fmt.Sprintf(format, args...)))
}

// typeDecls returns a package's type declarations in source order, failing
// on anything else: the spec declares types, and the contract constants too.
func (b *builder) decls(pkg *packages.Package, allowConsts bool) (types []typeDecl, consts []*ast.ValueSpec, order []ast.Spec) {
	for _, f := range pkg.Syntax {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok {
				b.errorf(pkg, d.Pos(), "the spec declares types only; functions belong in the generated code")
				continue
			}
			for _, sp := range gd.Specs {
				doc := gd.Doc
				switch sp := sp.(type) {
				case *ast.ImportSpec:
				case *ast.TypeSpec:
					if sp.Doc != nil || len(gd.Specs) > 1 {
						doc = sp.Doc
					}
					types = append(types, typeDecl{sp, doc})
					order = append(order, sp)
				case *ast.ValueSpec:
					if !allowConsts || gd.Tok != token.CONST {
						b.errorf(pkg, sp.Pos(), "unexpected %s declaration in the spec", gd.Tok)
						continue
					}
					if sp.Doc == nil && len(gd.Specs) == 1 {
						sp.Doc = gd.Doc
					}
					consts = append(consts, sp)
					order = append(order, sp)
				}
			}
		}
	}
	return types, consts, order
}

// named reads a declaration's doc and directives, and checks the Go
// convention that a doc comment starts with the declared name.
func (b *builder) named(pkg *packages.Package, name *ast.Ident, doc *ast.CommentGroup) (Named, directives) {
	text, ds, err := parseDoc(doc)
	if err != nil {
		b.errorf(pkg, name.Pos(), "%s: %v", name.Name, err)
		return Named{Name: name.Name}, directives{}
	}
	switch {
	case text == "":
		b.errorf(pkg, name.Pos(), "%s has no doc comment", name.Name)
	case !startsWithName(text, name.Name):
		b.errorf(pkg, name.Pos(), "the doc comment of %s must start with its name", name.Name)
	}
	return Named{Name: name.Name, Doc: text}, ds
}

// startsWithName reports whether doc starts with name as a whole word,
// optionally after an article ("A Foo is").
func startsWithName(doc, name string) bool {
	for _, article := range []string{"", "A ", "An ", "The "} {
		if rest, ok := strings.CutPrefix(doc, article+name); ok && (rest == "" || !isIdentByte(rest[0])) {
			return true
		}
	}
	return false
}

func isIdentByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// done reports directives nobody consumed.
func (b *builder) done(pkg *packages.Package, pos token.Pos, ds directives) {
	if err := ds.done(); err != nil {
		b.errorf(pkg, pos, "%v", err)
	}
}

// buildAPI reads package spec: surfaces, configs, options, the error table.
func (b *builder) buildAPI() {
	pkg := b.api
	decls, _, _ := b.decls(pkg, false)
	var codes *typeDecl
	b.optionDecl = map[string]typeDecl{}
	var pending []typeDecl // declarations whose role is given by another one
	var tables []typeDecl  // enum tables, read once their types are known
	enums := map[string]Named{}
	for i := range decls {
		d := decls[i]
		name := d.spec.Name.Name
		switch t := d.spec.Type.(type) {
		case *ast.InterfaceType:
			b.buildSurface(d, t)
		case *ast.StructType:
			_, ds, _ := parseDoc(d.doc)
			switch _, isConfig := ds["config"]; {
			case name == codesName:
				codes = &decls[i]
			case strings.HasSuffix(name, errorSuffix):
				b.errTypes[name] = t
				b.errDecls = append(b.errDecls, d)
			case isConfig:
				b.buildConfig(d, t)
			case ds["enum"] != "":
				tables = append(tables, d)
			case ds["options"] != "":
				b.buildOptionSet(d, t)
			case hasDirective(ds, "go"):
				b.buildGoType(d, t)
			default:
				pending = append(pending, d)
			}
		case *ast.Ident:
			if t.Name != "int" {
				b.errorf(pkg, d.spec.Pos(), "%s: a named basic type must be an int (%s or an enum)", name, codeName)
				continue
			}
			n, ds := b.named(pkg, d.spec.Name, d.doc)
			b.done(pkg, d.spec.Pos(), ds)
			if name == codeName {
				b.m.CodeType = n
			} else {
				enums[name] = n
			}
		default:
			b.errorf(pkg, d.spec.Pos(), "%s: unsupported type declaration", name)
		}
	}
	for _, d := range pending {
		b.optionDecl[d.spec.Name.Name] = d
	}
	for _, d := range tables {
		b.buildEnum(d, enums)
	}
	for name := range enums {
		b.errs = append(b.errs, fmt.Errorf("spec: %s: no //lock:enum %s table gives its values", name, name))
	}
	if codes == nil {
		b.errs = append(b.errs, fmt.Errorf("spec: no %s table", codesName))
	} else {
		b.buildCodes(*codes)
	}
	if b.m.CodeType.Name == "" {
		b.errs = append(b.errs, fmt.Errorf("spec: no %s type", codeName))
	}
}

// hasDirective reports whether ds holds the directive name, with or
// without an argument.
func hasDirective(ds directives, name string) bool {
	_, ok := ds[name]
	return ok
}

// buildGoType reads a //lock:go declaration: a type written by hand in the
// Go API, declared in the spec as an empty struct so that options can name
// it. It has no C form.
func (b *builder) buildGoType(d typeDecl, st *ast.StructType) {
	n, ds := b.named(b.api, d.spec.Name, d.doc)
	if arg, _ := ds.take("go"); arg != "" {
		b.errorf(b.api, d.spec.Pos(), "%s: //lock:go takes no argument, got %q", n.Name, arg)
	}
	b.done(b.api, d.spec.Pos(), ds)
	if len(st.Fields.List) > 0 {
		b.errorf(b.api, d.spec.Pos(), "%s: a //lock:go type is declared as struct{}; it is written by hand in the Go API", n.Name)
	}
	b.m.GoTypes = append(b.m.GoTypes, n)
}

// buildSurface reads an API interface: an API type, the package, or the C
// ABI.
func (b *builder) buildSurface(d typeDecl, it *ast.InterfaceType) {
	pkg := b.api
	n, ds := b.named(pkg, d.spec.Name, d.doc)
	s := Surface{Named: n}
	_, isType := ds.take("type")
	_, isPkg := ds.take("package")
	abiArgs, isABI := ds.take("abi")
	s.CHandle, _ = ds.take("c")
	b.done(pkg, d.spec.Pos(), ds)
	roles := 0
	for _, has := range []bool{isType, isPkg, isABI} {
		if has {
			roles++
		}
	}
	switch {
	case roles != 1:
		b.errorf(pkg, d.spec.Pos(), "%s: an API interface needs exactly one of //lock:type, //lock:package or //lock:abi", n.Name)
		return
	case isABI:
		b.buildABI(d, it, n, abiArgs)
		return
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
		m.C = b.cBinding(mds, f.Pos(), m)
		b.methodKind(&m, mds, isPkg, f.Pos())
		s.Methods = append(s.Methods, m)
	}
	if isPkg {
		if b.m.Package.Name != "" {
			b.errorf(pkg, d.spec.Pos(), "%s: a second //lock:package interface (first: %s)", n.Name, b.m.Package.Name)
			return
		}
		b.m.Package = s
		return
	}
	b.m.Surfaces = append(b.m.Surfaces, s)
}

// methodKind sets how a method is implemented, from its directives. A method
// with none forwards to the hand-written implementation named like it with
// a lower-case first letter, or as //lock:impl names it.
func (b *builder) methodKind(m *Method, ds directives, inPackage bool, pos token.Pos) {
	pkg := b.api
	kinds := 0
	if inPackage {
		if _, ok := ds.take("default"); ok {
			m.Kind, kinds = OnDefault, kinds+1
		}
		if cfg, ok := ds.take("env"); ok {
			m.Kind, m.Config, kinds = FromEnv, cfg, kinds+1
		}
		if _, ok := ds.take("codeof"); ok {
			m.Kind, kinds = ClassifyErr, kinds+1
			if len(m.Params) != 1 || m.Params[0].Type.Kind != Error || len(m.Results) != 1 || m.Results[0].Type.Name != codeName {
				b.errorf(pkg, pos, "%s: //lock:codeof wants the signature (err error) %s", m.Name, codeName)
			}
		}
	}
	if kinds > 1 {
		b.errorf(pkg, pos, "%s: //lock:default, //lock:env and //lock:codeof exclude each other", m.Name)
	}
	impl, hasImpl := ds.take("impl")
	switch {
	case kinds == 0:
		m.Kind, m.Impl = Forward, lowerFirst(m.Name)
		if hasImpl {
			m.Impl = impl
		}
		if !isIdent(m.Impl) || m.Impl != lowerFirst(m.Impl) {
			b.errorf(pkg, pos, "%s: //lock:impl wants an unexported identifier, got %q", m.Name, m.Impl)
		}
	case hasImpl:
		b.errorf(pkg, pos, "%s: //lock:impl is for methods written by hand", m.Name)
	}
	b.done(pkg, pos, ds)
}

// isIdent reports whether s is a Go identifier.
func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		if !isIdentByte(s[i]) || i == 0 && '0' <= s[i] && s[i] <= '9' {
			return false
		}
	}
	return s != ""
}

// method reads a method's signature.
func (b *builder) method(pkg *packages.Package, id *ast.Ident, n Named) (Method, bool) {
	fn, ok := pkg.TypesInfo.Defs[id].(*types.Func)
	if !ok {
		b.errorf(pkg, id.Pos(), "%s: no type information", id.Name)
		return Method{}, false
	}
	sig := fn.Type().(*types.Signature)
	m := Method{Named: n, Variadic: sig.Variadic()}
	var err error
	if m.Params, err = b.params(sig.Params(), sig.Variadic()); err == nil {
		m.Results, err = b.params(sig.Results(), false)
	}
	if err != nil {
		b.errorf(pkg, id.Pos(), "%s: %v", id.Name, err)
		return Method{}, false
	}
	return m, true
}

func (b *builder) params(tup *types.Tuple, variadic bool) ([]Param, error) {
	ps := make([]Param, 0, tup.Len())
	for i := range tup.Len() {
		v := tup.At(i)
		t := v.Type()
		if variadic && i == tup.Len()-1 {
			t = t.(*types.Slice).Elem()
		}
		mt, err := b.typeOf(t)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", v.Name(), err)
		}
		ps = append(ps, Param{Name: v.Name(), Type: mt})
	}
	return ps, nil
}

// typeOf reduces a Go type to the spec's language-neutral types.
func (b *builder) typeOf(t types.Type) (Type, error) {
	if a, ok := t.(*types.Alias); ok {
		if a.Obj().Pkg() == nil && a.Obj().Name() == "any" {
			return Type{Kind: Any}, nil
		}
		t = types.Unalias(t)
	}
	switch t := t.(type) {
	case *types.Basic:
		switch t.Kind() {
		case types.Bool:
			return Type{Kind: Bool}, nil
		case types.Int, types.UntypedInt:
			return Type{Kind: Int}, nil
		case types.Uint64:
			return Type{Kind: Uint64}, nil
		case types.String:
			return Type{Kind: String}, nil
		}
	case *types.Named:
		obj := t.Obj()
		switch {
		case obj.Pkg() == nil && obj.Name() == "error":
			return Type{Kind: Error}, nil
		case obj.Pkg() == nil:
		case obj.Pkg().Path() == "time" && obj.Name() == "Duration":
			return Type{Kind: Duration}, nil
		case obj.Pkg().Path() == "time" && obj.Name() == "Time":
			return Type{Kind: Time}, nil
		case obj.Pkg().Path() == "context" && obj.Name() == "Context":
			return Type{Kind: Context}, nil
		case obj.Pkg().Path() == b.api.PkgPath:
			return Type{Kind: Declared, Name: obj.Name(), Scope: ScopeAPI}, nil
		case obj.Pkg().Path() == b.contract.PkgPath:
			return Type{Kind: Declared, Name: obj.Name(), Scope: ScopeContract}, nil
		default:
			return Type{Kind: Extern, Ref: &Ref{Path: obj.Pkg().Path(), Name: obj.Name()}}, nil
		}
	case *types.Pointer:
		elem, err := b.typeOf(t.Elem())
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Pointer, Elem: &elem}, nil
	case *types.Signature:
		ps, err := b.params(t.Params(), t.Variadic())
		if err != nil {
			return Type{}, err
		}
		rs, err := b.params(t.Results(), false)
		if err != nil {
			return Type{}, err
		}
		return Type{Kind: Func, Params: ps, Results: rs, Variadic: t.Variadic()}, nil
	case *types.Chan:
		elem, err := b.typeOf(t.Elem())
		if err != nil {
			return Type{}, err
		}
		dir := map[types.ChanDir]ChanDir{types.SendRecv: Both, types.RecvOnly: RecvOnly, types.SendOnly: SendOnly}[t.Dir()]
		return Type{Kind: Chan, Elem: &elem, Dir: dir}, nil
	case *types.Struct:
		if t.NumFields() == 0 {
			return Type{Kind: EmptyStruct}, nil
		}
	case *types.Interface:
		if t.Empty() {
			return Type{Kind: Any}, nil
		}
	}
	return Type{}, fmt.Errorf("type %s is not one the spec supports", t)
}

// fields reads a struct's fields, one per name.
func (b *builder) fields(pkg *packages.Package, st *ast.StructType, owner string, needDoc bool) ([]Field, []tags) {
	var fs []Field
	var ts []tags
	for _, f := range st.Fields.List {
		if len(f.Names) == 0 {
			b.errorf(pkg, f.Pos(), "%s: embedded fields are not supported", owner)
			continue
		}
		tag := ""
		if f.Tag != nil {
			tag = f.Tag.Value
		}
		t, err := parseTag(tag)
		if err != nil {
			b.errorf(pkg, f.Pos(), "%s: %v", owner, err)
			continue
		}
		mt, err := b.typeOf(pkg.TypesInfo.TypeOf(f.Type))
		if err != nil {
			b.errorf(pkg, f.Pos(), "%s: %v", owner, err)
			continue
		}
		comment := ""
		if f.Comment != nil {
			comment = strings.TrimRight(f.Comment.Text(), "\n")
		}
		for _, id := range f.Names {
			var n Named
			switch {
			case f.Doc != nil || needDoc:
				var ds directives
				n, ds = b.named(pkg, id, f.Doc)
				b.done(pkg, id.Pos(), ds)
			default:
				n = Named{Name: id.Name}
			}
			fs = append(fs, Field{Named: n, Type: mt, Comment: comment})
			ts = append(ts, copyTags(t))
		}
	}
	return fs, ts
}

func copyTags(t tags) tags {
	c := make(tags, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}
