package emitgo

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// api emits sdk/go/api_gen.go: the API's types, their methods and the
// package functions, in spec order and with the spec's docs. A type embeds
// the hand-written struct that holds its fields (Manager embeds
// managerState); a method or function calls the hand-written implementation
// the model names (Try calls try), or, for the package functions marked so,
// the same method on Default().
func (e *emitter) api() error {
	f := e.newFile(e.l.SDK)
	if err := e.functions(f); err != nil {
		return err
	}
	for _, s := range e.m.Surfaces {
		if err := e.surfaceType(f, s); err != nil {
			return err
		}
	}
	return e.save(e.l.SDK, "api_gen.go", f)
}

// functions emits the package functions that are not emitted elsewhere
// (ConfigFromEnv and CodeOf have their own files).
func (e *emitter) functions(f *jen.File) error {
	for _, m := range e.m.Package.Methods {
		var call *jen.Statement
		switch m.Kind {
		case model.Forward:
			call = jen.Id(m.Impl).Call(args(m.Params, false)...)
		case model.OnDefault:
			call = jen.Id("Default").Call().Dot(m.Name).Call(args(m.Params, m.Variadic)...)
		default:
			continue
		}
		f.Add(doc(m.Doc))
		f.Func().Id(m.Name).Add(e.signature(m.Params, m.Results, m.Variadic)).Block(ret(m, call))
		f.Line()
	}
	return nil
}

// surfaceType emits one API type and its methods.
func (e *emitter) surfaceType(f *jen.File, s model.Surface) error {
	r := receiver(s.Name)
	f.Add(doc(s.Doc))
	f.Type().Id(s.Name).Struct(
		jen.Id(s.State()).Comment("the fields, written by hand"),
	)
	for _, m := range s.Methods {
		if m.Kind != model.Forward {
			return fmt.Errorf("emitgo: %s.%s: a method of an API type is written by hand", s.Name, m.Name)
		}
		for _, p := range append(append([]model.Param(nil), m.Params...), m.Results...) {
			if p.Name == r {
				return fmt.Errorf("emitgo: %s.%s: parameter %s has the receiver's name; rename it in the spec", s.Name, m.Name, p.Name)
			}
		}
		f.Line()
		f.Add(doc(m.Doc))
		f.Func().Params(jen.Id(r).Op("*").Id(s.Name)).Id(m.Name).Add(e.signature(m.Params, m.Results, m.Variadic)).Block(
			ret(m, jen.Id(r).Dot(m.Impl).Call(args(m.Params, false)...)),
		)
	}
	f.Line()
	return nil
}

// ret returns call's results, or makes the call when there are none.
func ret(m model.Method, call *jen.Statement) jen.Code {
	if len(m.Results) == 0 {
		return call
	}
	return jen.Return(call)
}
