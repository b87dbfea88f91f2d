// Package model is the generator's intermediate form of the spec: every
// declaration resolved, checked and reduced to what an emitter needs, with no
// go/types or go/ast left in it. The Go emitter walks it today; a C ABI
// emitter (sdk/cshared, header, Python) can walk the same model later, which
// is why types are described by a language-neutral Kind rather than by Go
// syntax.
package model

import (
	"strconv"
	"strings"
	"time"
)

// Model is the whole spec.
type Model struct {
	Codes    []Code      // the error table, in numeric order
	Errors   []ErrorType // the typed errors, in spec order
	Configs  []Config    // configuration structs, in spec order
	Options  []OptionSet // option sets, in spec order
	Surfaces []Surface   // the API types (Manager, ManagedLock), in spec order
	Package  Surface     // the package-level functions
	Contract []Decl      // the driver contract, in spec order
	ABI      *ABI        // the C ABI's own functions, or nil when the spec declares no C ABI
	Enums    []Enum      // named int types with a table of values, in spec order
	GoTypes  []Named     // types written by hand in the Go API (//lock:go), in spec order

	CodeType Named // the Code type's name and doc
}

// InputError returns the error type generated code uses to report bad
// input, and false when the spec marks none.
func (m *Model) InputError() (ErrorType, bool) {
	for _, e := range m.Errors {
		if e.Input {
			return e, true
		}
	}
	return ErrorType{}, false
}

// PackageFunc returns the package-level function of the given kind, and false
// when the spec declares none.
func (m *Model) PackageFunc(kind MethodKind) (Method, bool) {
	for _, f := range m.Package.Methods {
		if f.Kind == kind {
			return f, true
		}
	}
	return Method{}, false
}

// Named is a declared name with its doc comment.
type Named struct {
	Name string
	Doc  string // doc comment text, directives removed, no trailing newline
}

// Code is one row of the error table.
type Code struct {
	Named           // Name is the bare name ("NotAcquired"); emitters add their prefix
	Value    int    // the stable number
	HTTP     int    // the HTTP status for errors with this code
	Sentinel string // the sentinel error's name, or ""
	Message  string // the sentinel's text
	Error    string // the typed error's name, or ""
	Is       *Ref   // an error outside the library that has this code, or nil
	Rank     int    // precedence when an error tree holds several codes: lower wins; 0 means never matched
	Fallback bool   // the code of an error with no code of the table
	Text     string // a short description for other languages (zl_strerror), or ""
}

// Enum is a named int type and its values, read from a //lock:enum table.
type Enum struct {
	Named
	Values []EnumValue // in increasing order, all > 0 (0 is "not set")
}

// EnumValue is one constant of an Enum.
type EnumValue struct {
	Named        // the constant's Go name, as the table's field spells it
	Value int    // its number
	Text  string // what String returns: the value in words
}

// Ref names a declaration of another package, such as context.Canceled.
type Ref struct {
	Path string // import path
	Name string
}

// ErrorType is a typed error: a struct whose pointer implements error.
type ErrorType struct {
	Named
	Input  bool    // the error generated code returns for bad input (string fields Field and Reason)
	Code   string  // the name of its Code
	Fields []Field // its fields, in order
	Format []Piece // its Error() message
	Unwrap string  // the name of the field Unwrap returns, or ""
}

// Piece is one piece of an error message: literal text, or a field's value.
type Piece struct {
	Text  string // literal text, when Field is ""
	Field string // the field whose value is printed
	Quote bool   // print the field as a quoted Go string (%q) rather than %v
	Guard string // the field that must be non-zero for the piece to be printed, or ""
}

// Field is a struct field.
type Field struct {
	Named
	Type    Type
	Comment string // trailing line comment, when the field has one
}

// Config is a configuration struct: fields with defaults and environment
// variables.
type Config struct {
	Named
	Fields []ConfigField
}

// ConfigField is one field of a configuration struct.
type ConfigField struct {
	Named
	Type       Type     // a String, or a Declared config struct
	Default    string   // the literal default, or ""
	DefaultEnv string   // the environment variable read for the default when Default is "", or ""
	Env        string   // the environment variable ConfigFromEnv reads, or ""
	JSON       string   // the JSON member name
	OneOf      []string // the values allowed, when the field is an enumeration
}

// OptionSet is a settings struct given as option values.
type OptionSet struct {
	Named
	Option Named         // the option type ("Option")
	Into   string        // the hand-written struct the options fill ("options"), or "" for a generated one
	Fields []OptionField // one per option
}

// OptionField is one setting of an option set.
type OptionField struct {
	Named
	Type    Type     // a Duration, Bool or String; or, Go-only, a //lock:go type or a pointer to an Extern type
	Default Default  // its default
	Set     string   // a bool field of the Into struct set to true with it, or ""
	Implies []string // bool settings this one turns on
	Join    string   // the hand-written func(old, new T) T that combines a repeated option, or "" for "a later one wins"
}

// GoOnly reports whether the option has no C form: its type exists only in
// Go.
func (f OptionField) GoOnly() bool {
	switch f.Type.Kind {
	case Duration, Bool, String:
		return false
	}
	return true
}

// Constructor is the name of the option function that sets f.
func (f OptionField) Constructor() string { return "With" + f.Name }

// Default is an option's default: a literal, or a fraction of the lock's
// TTL.
type Default struct {
	Literal  string        // the default as written, for string and literal duration defaults
	Duration time.Duration // a literal duration default
	TTLDiv   int           // > 0: the default is the TTL divided by TTLDiv
}

// IsZero reports whether there is no default beyond the zero value.
func (d Default) IsZero() bool { return d.Literal == "" && d.TTLDiv == 0 }

// Text describes the default in prose, for doc comments.
func (d Default) Text() string {
	switch {
	case d.TTLDiv == 1:
		return "the lock's TTL"
	case d.TTLDiv == 3:
		return "a third of the lock's TTL"
	case d.TTLDiv > 0:
		return "the lock's TTL divided by " + strconv.Itoa(d.TTLDiv)
	case d.Duration != 0:
		return d.Duration.String()
	default:
		return `"` + d.Literal + `"`
	}
}

// Surface is an API type or the package-level function set.
type Surface struct {
	Named
	Methods []Method // in spec order
	CHandle string   // the C ABI's handle type for values of the surface ("zl_manager"), or ""
}

// State is the hand-written struct a surface's type embeds for its fields:
// Manager embeds managerState.
func (s Surface) State() string { return lowerFirst(s.Name) + "State" }

// MethodKind says how an emitter implements a method.
type MethodKind int

// The method kinds.
const (
	Forward     MethodKind = iota // call the hand-written implementation (Impl) with the same arguments
	OnDefault                     // a package function calling the same method on Default()
	FromEnv                       // the config-from-environment constructor of Config
	ClassifyErr                   // CodeOf: the code of any error, by the error table
)

// Method is a method of a surface, or a package-level function.
type Method struct {
	Named
	Kind     MethodKind
	Params   []Param
	Results  []Param
	Variadic bool   // the last parameter is variadic (its Type is the element type)
	Impl     string // Forward: the hand-written function or method it calls
	ABIOnly  bool   // a function of the C ABI alone (the //lock:abi interface)
	Config   string // FromEnv: the config struct
	C        CBinding
}

// lowerFirst lowers an identifier's first letter: Timeout → timeout.
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// Param is a parameter or result.
type Param struct {
	Name string // may be "" for results
	Type Type
}

// Kind classifies a type in language-neutral terms.
type Kind int

// The kinds of type the spec uses.
const (
	Invalid     Kind = iota
	Bool             // bool
	Int              // int
	Uint64           // uint64
	String           // string
	Duration         // time.Duration
	Time             // time.Time
	Context          // context.Context
	Error            // error
	Any              // any
	Func             // a function type
	Chan             // a channel type
	EmptyStruct      // struct{}
	Declared         // a type declared in the spec
	Pointer          // a pointer to Elem
	Extern           // a named type of another Go package (Ref): Go-only, with no C form
)

// Scope says which spec package declares a Declared type.
type Scope int

// The spec packages.
const (
	ScopeAPI      Scope = iota // package spec: the public API
	ScopeContract              // package spec/driver: the driver contract
)

// ChanDir is a channel's direction.
type ChanDir int

// The channel directions.
const (
	Both ChanDir = iota
	RecvOnly
	SendOnly
)

// Type is a type in the spec.
type Type struct {
	Kind     Kind
	Name     string  // Declared: the declared name
	Scope    Scope   // Declared: where it is declared
	Elem     *Type   // Chan, Pointer: the element type
	Ref      *Ref    // Extern: the package and name
	Dir      ChanDir // Chan: the direction
	Params   []Param // Func
	Results  []Param // Func
	Variadic bool    // Func
}

// Equal reports whether a and b are the same type.
func (a Type) Equal(b Type) bool {
	if a.Kind != b.Kind || a.Name != b.Name || a.Scope != b.Scope || a.Dir != b.Dir || a.Variadic != b.Variadic {
		return false
	}
	if (a.Ref == nil) != (b.Ref == nil) || a.Ref != nil && *a.Ref != *b.Ref {
		return false
	}
	if (a.Elem == nil) != (b.Elem == nil) || a.Elem != nil && !a.Elem.Equal(*b.Elem) {
		return false
	}
	return sameParams(a.Params, b.Params) && sameParams(a.Results, b.Results)
}

// DeclKind says which of a Decl's fields is set.
type DeclKind int

// The declaration kinds of the driver contract.
const (
	ConstDecl DeclKind = iota
	InterfaceDecl
	StructDecl
)

// Decl is one declaration of the driver contract.
type Decl struct {
	Kind      DeclKind
	Const     Const
	Interface Interface
	Struct    Struct
}

// Const is a constant.
type Const struct {
	Named
	Type Type  // Int (untyped integer) or Duration
	Int  int64 // Int: the value
	Dur  time.Duration
}

// Interface is an interface of the driver contract.
type Interface struct {
	Named
	Methods []Method
}

// Struct is a plain struct of the driver contract.
type Struct struct {
	Named
	Fields []Field
}
