// Package cabi lowers the spec's model to the C ABI: C names and C types for
// every function, handle, error code, option and callback, with the role of
// each parameter. The C ABI emitters (the header, the cgo exports, the
// Python ctypes module and the Node.js koffi binding) render this one
// description, so they cannot disagree about a name, a type or the order of
// parameters.
//
// The lowering rules, applied to every method the spec marks //lock:c:
//
//   - an API type's value is a handle (typedef uint64_t), the receiver
//     comes first, named as the Go receiver (m, l);
//   - context.Context disappears: the library supplies it;
//   - string → const char *; time.Duration → int64_t NAME_ms; int and Code →
//     int; a config struct → const char *CONFIG_json;
//   - func(ctx) error → a callback (PREFIX_callback) receiving the lock
//     handle, plus void *user_data;
//   - variadic options → const PREFIX_options * (NULL: defaults), or the
//     fields the binding names with options=, one parameter each;
//   - the error result → the int code the function returns;
//   - another result → an out-parameter written on success: bool → int *,
//     uint64 → uint64_t *, time.Time → int64_t * (Unix ms), a surface → a
//     handle *, a string → char *buf, size_t *len;
//   - a function with no error and no handle returns its value directly: an
//     int, or a const char * the library owns (static or thread).
package cabi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/zerotal/lock/gen/internal/model"
)

// ABI is the lowered C ABI.
type ABI struct {
	Library  string // lib<Library>.so, <Library>.h, the Python package
	Prefix   string // "zl"
	Version  int
	Doc      string   // the ABI's doc comment
	Codes    []Code   // the error codes, in numeric order
	Handles  []Handle // in spec order
	Options  *Struct  // the options struct, or nil when no function takes one
	Callback *Callback
	Config   *Config // the configuration zl_open reads as JSON, or nil
	Funcs    []Func  // in header order

	CodeType string // the Go name of the code type ("Code")
	OK       string // the success code's C name
	Fallback string // the C name of the code of errors from outside the library: a failed callback's
	Detail   string // the function returning the calling thread's last error (a thread string), or ""
	Describe string // the function describing a code (a static string of a code), or ""
}

// Code is one error code.
type Code struct {
	model.Code
	CName string // ZL_NOT_ACQUIRED
	Class string // the Python exception class ("NotAcquiredError"); "" for success
	Desc  string // the short description zl_strerror returns
}

// Handle is an opaque handle type standing for values of a surface.
type Handle struct {
	Surface string // "ManagedLock"
	CType   string // "zl_lock"
	Doc     string // the surface's doc
	Param   string // the receiver's name ("l")
	MadeBy  []string
	FreedBy string // the function that ends a handle's life
}

// Struct is the options struct.
type Struct struct {
	CType  string // "zl_options"
	Option string // the Go option type it stands for ("Option")
	Doc    string
	Fields []StructField
}

// StructField is a field of the options struct.
type StructField struct {
	CName  string // "timeout_ms", "timeout_set", "refresh"
	CType  string // "int64_t", "int", "const char *"
	Doc    string
	Option model.OptionField
	SetOf  bool // the flag saying the option's value was given (its Set tag)
}

// Callback is the function pointer type run under a lock.
type Callback struct {
	CType  string // "zl_callback"
	Handle *Handle
	Doc    string
}

// Config is the configuration a function reads as JSON.
type Config struct {
	Name    string // the Go config type ("Config")
	Doc     string // its doc
	Members []Member
}

// Member is a JSON member of a config, or a nested object.
type Member struct {
	JSON      string
	Field     model.ConfigField
	Members   []Member // a nested config's members
	StructDoc string   // a nested config's doc
}

// FuncKind says how the library implements a function.
type FuncKind int

// The function kinds.
const (
	// Method calls the Go API method on the receiver handle's value.
	Method FuncKind = iota
	// PackageFunc calls the Go API's package-level function.
	PackageFunc
	// Glue calls the hand-written glue of the C ABI.
	Glue
)

// Func is a C function.
type Func struct {
	Name    string
	Doc     string // the spec's doc, with Go names turned into the C ones
	Go      string // the Go API it stands for ("ManagedLock.Acquire"), or "" for glue
	Kind    FuncKind
	Method  model.Method
	Surface string // the receiver's surface, for Kind Method
	Params  []Param
	Result  Result
	Frees   bool // the first parameter's handle dies with the call
}

// Role is what a C parameter carries.
type Role int

// The parameter roles.
const (
	RoleHandle        Role = iota // a handle: the receiver, or a handle argument
	RoleString                    // const char *: a Go string
	RoleMillis                    // int64_t milliseconds: a time.Duration
	RoleInt                       // int: a Go int
	RoleCode                      // int: an error code
	RoleConfig                    // const char *: a config struct as JSON
	RoleOptions                   // const PREFIX_options *: variadic options
	RoleOption                    // one option, flattened into a parameter
	RoleCallback                  // PREFIX_callback
	RoleUserData                  // void *: passed back to the callback
	RoleOutBool                   // int *
	RoleOutUint64                 // uint64_t *
	RoleOutUnixMillis             // int64_t *: a time.Time
	RoleOutInt                    // int *
	RoleOutHandle                 // PREFIX_x *: a new handle
	RoleOutBuffer                 // char *buf: a string, with RoleOutLen
	RoleOutLen                    // size_t *len
)

// Out reports whether the role is an out-parameter.
func (r Role) Out() bool { return r >= RoleOutBool }

// Param is a C parameter.
type Param struct {
	Name     string
	CType    string // as written before the name: "const char *", "zl_lock"
	Role     Role
	Handle   *Handle            // RoleHandle, RoleOutHandle
	Option   *model.OptionField // RoleOption
	Config   string             // RoleConfig: the config type
	GoIndex  int                // the spec parameter it comes from, or -1
	Doc      string             // one line for the header
	Nullable bool               // NULL is a valid value
}

// Decl renders the parameter as in a prototype.
func (p Param) Decl() string { return Declare(p.CType, p.Name) }

// ResultKind says what a C function returns.
type ResultKind int

// The result kinds.
const (
	ResultCode   ResultKind = iota // int: ZL_OK or an error code
	ResultInt                      // int: a value
	ResultString                   // const char *: a string the library owns
)

// Result is what a C function returns.
type Result struct {
	Kind   ResultKind
	CType  string
	String model.Ownership // ResultString
}

// Lower lowers m's C ABI. It fails on a method whose signature has no C
// form: mark such a method //lock:c - and say why.
func Lower(m *model.Model) (*ABI, error) {
	if m.ABI == nil {
		return nil, nil
	}
	l := &lowerer{m: m, a: &ABI{
		Library:  m.ABI.Library,
		Prefix:   m.ABI.Prefix,
		Version:  m.ABI.Version,
		Doc:      m.ABI.Doc,
		CodeType: m.CodeType.Name,
	}}
	l.codes()
	l.handles()
	l.config()
	l.funcs()
	l.roles()
	if len(l.errs) > 0 {
		return nil, fmt.Errorf("cabi: %s", strings.Join(l.errs, "\ncabi: "))
	}
	l.translateDocs()
	return l.a, nil
}

type lowerer struct {
	m    *model.Model
	a    *ABI
	errs []string
}

func (l *lowerer) errorf(format string, args ...any) {
	l.errs = append(l.errs, fmt.Sprintf(format, args...))
}

func (l *lowerer) codes() {
	for _, c := range l.m.Codes {
		cc := Code{Code: c, CName: l.upper(c.Name), Desc: c.Text}
		if cc.Desc == "" {
			cc.Desc = strings.ReplaceAll(snake(c.Name), "_", " ")
		}
		if c.Value != 0 {
			cc.Class = c.Name + "Error"
		}
		l.a.Codes = append(l.a.Codes, cc)
	}
}

// roles finds the codes and functions the generated docs refer to.
func (l *lowerer) roles() {
	for _, c := range l.a.Codes {
		switch {
		case c.Value == 0:
			l.a.OK = c.CName
		case c.Fallback:
			l.a.Fallback = c.CName
		}
	}
	for _, f := range l.a.Funcs {
		switch {
		case f.Result.Kind == ResultString && f.Result.String == model.ThreadLocal && l.a.Detail == "":
			l.a.Detail = f.Name
		case f.Result.Kind == ResultString && len(f.Params) == 1 && f.Params[0].Role == RoleCode && l.a.Describe == "":
			l.a.Describe = f.Name
		}
	}
}

// upper is a C constant name: ZL_NOT_ACQUIRED.
func (l *lowerer) upper(name string) string {
	return strings.ToUpper(l.a.Prefix + "_" + snake(name))
}

func (l *lowerer) handles() {
	for _, s := range l.m.Surfaces {
		l.a.Handles = append(l.a.Handles, Handle{Surface: s.Name, CType: s.CHandle, Doc: s.Doc, Param: receiver(s.Name)})
	}
}

func (l *lowerer) handle(surface string) *Handle {
	for i := range l.a.Handles {
		if l.a.Handles[i].Surface == surface {
			return &l.a.Handles[i]
		}
	}
	return nil
}

// config records the JSON members of the config a function reads.
func (l *lowerer) config() {
	for _, f := range l.m.Package.Methods {
		for _, p := range f.Params {
			if f.C.Name != "" && p.Type.Kind == model.Declared && l.configStruct(p.Type.Name) != nil {
				l.a.Config = &Config{Name: p.Type.Name, Doc: l.configStruct(p.Type.Name).Doc, Members: l.members(p.Type.Name)}
				return
			}
		}
	}
}

func (l *lowerer) configStruct(name string) *model.Config {
	for i := range l.m.Configs {
		if l.m.Configs[i].Name == name {
			return &l.m.Configs[i]
		}
	}
	return nil
}

func (l *lowerer) members(config string) []Member {
	var out []Member
	for _, f := range l.configStruct(config).Fields {
		mb := Member{JSON: f.JSON, Field: f}
		if f.Type.Kind == model.Declared {
			mb.Members = l.members(f.Type.Name)
			mb.StructDoc = l.configStruct(f.Type.Name).Doc
		}
		out = append(out, mb)
	}
	return out
}

// funcs lowers the functions in header order: the library's own functions
// that take no handle, the package functions, then each surface's methods
// followed by the library functions on its handles.
func (l *lowerer) funcs() {
	var onHandle []model.Method
	for _, m := range l.m.ABI.Methods {
		if len(m.Params) > 0 && m.Params[0].Type.Kind == model.Declared && l.handle(m.Params[0].Type.Name) != nil {
			onHandle = append(onHandle, m)
			continue
		}
		l.add(m, Glue, "")
	}
	for _, m := range l.m.Package.Methods {
		if m.C.Name != "" {
			l.add(m, PackageFunc, "")
		}
	}
	for _, s := range l.m.Surfaces {
		for _, m := range s.Methods {
			if m.C.Name != "" {
				l.add(m, Method, s.Name)
			}
		}
		for _, m := range onHandle {
			if m.Params[0].Type.Name == s.Name {
				l.add(m, Glue, "")
			}
		}
	}
	for i := range l.a.Handles {
		h := &l.a.Handles[i]
		if h.FreedBy == "" {
			l.errorf("handle %s: no function frees it (mark one //lock:c NAME frees)", h.CType)
		}
		if len(h.MadeBy) == 0 {
			l.errorf("handle %s: no function makes one", h.CType)
		}
	}
}

// add lowers one method.
func (l *lowerer) add(m model.Method, kind FuncKind, surface string) {
	f := Func{Name: m.C.Name, Doc: m.Doc, Kind: kind, Method: m, Surface: surface, Frees: m.C.Frees}
	where := m.Name
	switch kind {
	case Method:
		f.Go = surface + "." + m.Name
		where = f.Go
	case PackageFunc:
		f.Go = m.Name
	}
	if surface != "" {
		h := l.handle(surface)
		f.Params = append(f.Params, Param{Name: h.Param, CType: h.CType, Role: RoleHandle, Handle: h, GoIndex: -1})
	}
	var errResult bool
	var value *model.Param
	for i := range m.Results {
		if m.Results[i].Type.Kind == model.Error {
			errResult = true
		} else {
			value = &m.Results[i]
		}
	}
	for i, p := range m.Params {
		l.param(&f, where, i, p, m.Variadic && i == len(m.Params)-1)
	}
	// C puts a callback and its user data last.
	slices.SortStableFunc(f.Params, func(a, b Param) int {
		return cmpBool(a.Role == RoleCallback || a.Role == RoleUserData, b.Role == RoleCallback || b.Role == RoleUserData)
	})
	hasHandle := slices.ContainsFunc(f.Params, func(p Param) bool { return p.Role == RoleHandle })
	direct := !errResult && !hasHandle
	f.Result = Result{Kind: ResultCode, CType: "int"}
	if value != nil {
		l.result(&f, where, *value, direct)
	} else if direct {
		l.errorf("%s: a function with no result, no error and no handle has nothing to say in C", where)
	}
	if f.Frees {
		if len(f.Params) == 0 || f.Params[0].Role != RoleHandle {
			l.errorf("%s: frees needs a handle as the first parameter", where)
		} else if h := f.Params[0].Handle; h.FreedBy != "" {
			l.errorf("%s: handle %s is already freed by %s", where, h.CType, h.FreedBy)
		} else {
			h.FreedBy = f.Name
		}
	}
	l.a.Funcs = append(l.a.Funcs, f)
}

// param lowers the i-th Go parameter.
func (l *lowerer) param(f *Func, where string, i int, p model.Param, variadic bool) {
	add := func(q Param) {
		q.GoIndex = i
		f.Params = append(f.Params, q)
	}
	switch t := p.Type; {
	case variadic:
		l.options(f, where, i, t.Name)
	case t.Kind == model.Context:
	case t.Kind == model.String:
		add(Param{Name: p.Name, CType: "const char *", Role: RoleString})
	case t.Kind == model.Duration:
		add(Param{Name: p.Name + "_ms", CType: "int64_t", Role: RoleMillis})
	case t.Kind == model.Int:
		add(Param{Name: p.Name, CType: "int", Role: RoleInt})
	case t.Kind == model.Declared && t.Name == l.m.CodeType.Name:
		add(Param{Name: p.Name, CType: "int", Role: RoleCode})
	case t.Kind == model.Declared && l.handle(t.Name) != nil:
		h := l.handle(t.Name)
		add(Param{Name: p.Name, CType: h.CType, Role: RoleHandle, Handle: h})
	case t.Kind == model.Declared && l.configStruct(t.Name) != nil:
		add(Param{Name: snake(t.Name) + "_json", CType: "const char *", Role: RoleConfig, Config: t.Name, Nullable: true})
	case t.Kind == model.Func:
		cb := l.callback(where, t)
		if cb == nil {
			return
		}
		add(Param{Name: p.Name, CType: cb.CType, Role: RoleCallback})
		add(Param{Name: "user_data", CType: "void *", Role: RoleUserData, Nullable: true})
	default:
		l.errorf("%s: parameter %s has no C form; mark the method //lock:c - and say why", where, p.Name)
	}
}

// options lowers variadic options: the options struct, or the fields the
// binding flattens.
func (l *lowerer) options(f *Func, where string, i int, option string) {
	var set *model.OptionSet
	for j := range l.m.Options {
		if l.m.Options[j].Option.Name == option {
			set = &l.m.Options[j]
		}
	}
	if set == nil {
		l.errorf("%s: variadic %s is not an option type", where, option)
		return
	}
	if len(f.Method.C.Flatten) > 0 {
		for _, name := range f.Method.C.Flatten {
			for j := range set.Fields {
				if of := &set.Fields[j]; of.Name == name {
					ctype, cname, ok := optionField(*of)
					if !ok {
						l.errorf("%s: option %s has no C form", where, name)
						continue
					}
					f.Params = append(f.Params, Param{Name: cname, CType: ctype, Role: RoleOption, Option: of, GoIndex: i})
				}
			}
		}
		return
	}
	s := l.optionStruct(where, set)
	if s == nil {
		return
	}
	f.Params = append(f.Params, Param{Name: "opts", CType: "const " + s.CType + " *", Role: RoleOptions, GoIndex: i, Nullable: true})
}

// optionField is the C type and name of an option.
func optionField(of model.OptionField) (ctype, name string, ok bool) {
	switch of.Type.Kind {
	case model.Duration:
		return "int64_t", snake(of.Name) + "_ms", true
	case model.Bool:
		return "int", snake(of.Name), true
	case model.String:
		return "const char *", snake(of.Name), true
	}
	return "", "", false
}

// optionStruct returns the options struct for set, making it on first use.
// The C ABI has one: a second option type in C signatures is an error.
func (l *lowerer) optionStruct(where string, set *model.OptionSet) *Struct {
	if s := l.a.Options; s != nil {
		if s.Option != set.Option.Name {
			l.errorf("%s: a second options struct (%s; the C ABI has %s)", where, set.Option.Name, s.Option)
			return nil
		}
		return s
	}
	s := &Struct{CType: l.a.Prefix + "_" + snake(set.Name), Option: set.Option.Name, Doc: set.Doc}
	for _, of := range set.Fields {
		ctype, cname, ok := optionField(of)
		if !ok {
			l.errorf("%s: option %s.%s has no C form", where, set.Name, of.Name)
			continue
		}
		s.Fields = append(s.Fields, StructField{CName: cname, CType: ctype, Doc: of.Doc, Option: of})
		if of.Set != "" {
			s.Fields = append(s.Fields, StructField{CName: snake(of.Name) + "_set", CType: "int", Option: of, SetOf: true})
		}
	}
	l.a.Options = s
	return s
}

// callback lowers func(ctx) error: the callback receives the handle of the
// lock it runs under, made the way the surface's maker makes it.
func (l *lowerer) callback(where string, t model.Type) *Callback {
	if len(t.Params) != 1 || t.Params[0].Type.Kind != model.Context || len(t.Results) != 1 || t.Results[0].Type.Kind != model.Error {
		l.errorf("%s: only func(ctx context.Context) error has a C form (a callback)", where)
		return nil
	}
	if l.a.Callback != nil {
		return l.a.Callback
	}
	var h *Handle
	for _, s := range l.m.Surfaces {
		for _, m := range s.Methods {
			if m.Kind == model.Forward && len(m.Results) == 1 && m.Results[0].Type.Kind == model.Declared && l.handle(m.Results[0].Type.Name) != nil {
				h = l.handle(m.Results[0].Type.Name)
			}
		}
	}
	if h == nil {
		l.errorf("%s: a callback receives a lock handle, and no surface method makes one", where)
		return nil
	}
	l.a.Callback = &Callback{CType: l.a.Prefix + "_callback", Handle: h}
	return l.a.Callback
}

// result lowers the value result.
func (l *lowerer) result(f *Func, where string, r model.Param, direct bool) {
	out := f.Method.C.Out
	outParam := func(ctype string, role Role) {
		if direct {
			l.errorf("%s: a function with no handle and no error returns an int or a string, not %s", where, ctype)
			return
		}
		f.Params = append(f.Params, Param{Name: out, CType: ctype + " *", Role: role, GoIndex: -1})
	}
	switch t := r.Type; {
	case t.Kind == model.String && direct:
		if f.Method.C.String == model.CallerBuffer {
			l.errorf("%s: a string returned directly is static or thread (say which)", where)
		}
		f.Result = Result{Kind: ResultString, CType: "const char *", String: f.Method.C.String}
	case t.Kind == model.String:
		if f.Method.C.String != model.CallerBuffer {
			l.errorf("%s: static and thread strings are returned directly, by functions without a handle or an error", where)
		}
		f.Params = append(f.Params,
			Param{Name: "buf", CType: "char *", Role: RoleOutBuffer, GoIndex: -1, Nullable: true},
			Param{Name: "len", CType: "size_t *", Role: RoleOutLen, GoIndex: -1})
	case t.Kind == model.Int && direct:
		f.Result = Result{Kind: ResultInt, CType: "int"}
	case t.Kind == model.Int:
		outParam("int", RoleOutInt)
	case t.Kind == model.Bool:
		outParam("int", RoleOutBool)
	case t.Kind == model.Uint64:
		outParam("uint64_t", RoleOutUint64)
	case t.Kind == model.Time:
		outParam("int64_t", RoleOutUnixMillis)
	case t.Kind == model.Declared && l.handle(t.Name) != nil:
		h := l.handle(t.Name)
		outParam(h.CType, RoleOutHandle)
		if len(f.Params) > 0 {
			f.Params[len(f.Params)-1].Handle = h
		}
		h.MadeBy = append(h.MadeBy, f.Name)
	default:
		l.errorf("%s: its result has no C form; mark the method //lock:c - and say why", where)
	}
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// Declare renders a C declaration of name with type ctype.
func Declare(ctype, name string) string {
	if strings.HasSuffix(ctype, "*") {
		return ctype + name
	}
	return ctype + " " + name
}

// receiver is a surface's receiver name, as the Go emitter names it: the
// initial of its last word, lowered (Manager → m, ManagedLock → l).
func receiver(typeName string) string {
	last := 0
	for i, r := range typeName {
		if 'A' <= r && r <= 'Z' {
			last = i
		}
	}
	return strings.ToLower(typeName[last : last+1])
}

// snake turns a Go name into a C one: RetryDelay → retry_delay, ABIVersion
// → abi_version, OK → ok.
func snake(name string) string {
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		upper := 'A' <= r && r <= 'Z'
		if upper && i > 0 {
			prevLower := 'a' <= rs[i-1] && rs[i-1] <= 'z' || '0' <= rs[i-1] && rs[i-1] <= '9'
			nextLower := i+1 < len(rs) && 'a' <= rs[i+1] && rs[i+1] <= 'z'
			prevUpper := 'A' <= rs[i-1] && rs[i-1] <= 'Z'
			if prevLower || prevUpper && nextLower {
				b.WriteByte('_')
			}
		}
		if upper {
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
