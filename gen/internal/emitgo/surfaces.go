package emitgo

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// Names the generated code shares with the hand-written glue.
const (
	engineField = "engine" // a wrapper's core value
	errField    = "err"    // why a wrapper without an engine is unusable, when known
	coreRun     = "Run"    // the core lock's method that runs fn under it, for //lock:run methods
)

// surfaces emits one file per wrapped API type (manager_gen.go,
// managedlock_gen.go): a struct holding the core value, and methods that
// delegate to it. A nil or zero wrapper, which has no engine, answers every
// call with an error instead of panicking.
func (e *emitter) surfaces() error {
	for _, s := range e.m.Surfaces {
		f := e.newFile(e.l.SDK)
		if err := e.surface1(f, s); err != nil {
			return err
		}
		if err := e.save(e.l.SDK, strings.ToLower(s.Name)+"_gen.go", f); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) surface1(f *jen.File, s model.Surface) error {
	r := receiver(s.Name)
	for _, m := range s.Methods {
		for _, p := range append(append([]model.Param(nil), m.Params...), m.Results...) {
			if p.Name == r {
				return fmt.Errorf("emitgo: %s.%s: parameter %s has the receiver's name; rename it in the spec", s.Name, m.Name, p.Name)
			}
		}
	}
	f.Add(doc(s.Doc))
	f.Type().Id(s.Name).Struct(
		jen.Id(engineField).Op("*").Qual(e.l.Core.Path, s.Wrap),
		jen.Id(errField).Error().Comment("why a "+s.Name+" without an engine is unusable, when known"),
	)
	for _, m := range s.Methods {
		body, err := e.methodBody(s, m, r)
		if err != nil {
			return err
		}
		f.Line()
		f.Add(doc(m.Doc))
		f.Func().Params(jen.Id(r).Op("*").Id(s.Name)).Id(m.Name).Add(e.signature(m.Params, m.Results, m.Variadic)).Block(body...)
	}

	f.Line()
	bad, err := e.inputError(s.Name, jen.Lit("is nil or zero; use one made by this package"))
	if err != nil {
		return err
	}
	f.Add(doc(fmt.Sprintf("unusable is the error of a call on a %s without an engine: a nil or zero one, or one standing for a failure.", s.Name)))
	f.Func().Params(jen.Id(r).Op("*").Id(s.Name)).Id("unusable").Params().Error().Block(
		jen.If(jen.Id(r).Op("!=").Nil().Op("&&").Id(r).Dot(errField).Op("!=").Nil()).Block(
			jen.Return(jen.Id(r).Dot(errField)),
		),
		jen.Return(bad),
	)
	return nil
}

// methodBody emits a surface method: the guard against a missing engine,
// then the delegation.
func (e *emitter) methodBody(s model.Surface, m model.Method, r string) ([]jen.Code, error) {
	engine := jen.Id(r).Dot(engineField)
	guard := jen.If(jen.Id(r).Op("==").Nil().Op("||").Add(engine.Clone()).Op("==").Nil()).Block(
		jen.Return(e.unusableResults(m, r)...),
	)
	switch m.Kind {
	case model.Delegate:
		call := engine.Clone().Dot(m.CoreName).Call(e.coreArgs(m)...)
		if len(m.Results) == 1 && m.Results[0].Type.Kind == model.Declared && e.isSurface(m.Results[0].Type.Name) {
			return []jen.Code{guard, jen.Return(e.wrap(m.Results[0].Type.Name, call))}, nil
		}
		for _, res := range m.Results {
			if res.Type.Kind == model.Declared && e.isSurface(res.Type.Name) {
				return nil, fmt.Errorf("emitgo: %s.%s: a surface can only be wrapped as the single result", s.Name, m.Name)
			}
		}
		if len(m.Results) == 0 {
			return []jen.Code{guard, call}, nil
		}
		return []jen.Code{guard, jen.Return(call)}, nil
	case model.Run:
		maker, err := e.maker(s)
		if err != nil {
			return nil, err
		}
		p := m.Params // ctx, key, ttl, fn, opts: checked by the model
		return []jen.Code{
			guard,
			jen.Return(engine.Clone().Dot(maker.CoreName).Call(jen.Id(p[1].Name), jen.Id(p[2].Name)).Dot(coreRun).Call(
				jen.Id(p[0].Name),
				jen.Qual(e.l.Core.Path, m.RunMode),
				e.applyOptions(p[4].Type.Name, jen.Id(p[4].Name)),
				jen.Id(p[3].Name),
			)),
		}, nil
	}
	return nil, fmt.Errorf("emitgo: %s.%s: method kind %d on a surface", s.Name, m.Name, m.Kind)
}

// maker finds the method of s that makes the lock its Run methods run
// under: the one delegating to core and returning another surface.
func (e *emitter) maker(s model.Surface) (model.Method, error) {
	var found []model.Method
	for _, m := range s.Methods {
		if m.Kind == model.Delegate && len(m.Results) == 1 && m.Results[0].Type.Kind == model.Declared && e.isSurface(m.Results[0].Type.Name) {
			found = append(found, m)
		}
	}
	if len(found) != 1 {
		return model.Method{}, fmt.Errorf("emitgo: %s: //lock:run needs exactly one method making a surface, found %d", s.Name, len(found))
	}
	return found[0], nil
}

// wrap wraps a core value in its surface's struct.
func (e *emitter) wrap(surface string, core jen.Code) *jen.Statement {
	return jen.Op("&").Id(surface).Values(jen.Dict{jen.Id(engineField): core})
}

// coreArgs passes a method's parameters on to core, turning variadic
// options into the core struct they fill.
func (e *emitter) coreArgs(m model.Method) []jen.Code {
	out := args(m.Params, false)
	if m.Variadic {
		last := m.Params[len(m.Params)-1]
		out[len(out)-1] = e.applyOptions(last.Type.Name, jen.Id(last.Name))
	}
	return out
}

// applyOptions converts a slice of option values into the struct they fill,
// for core.
func (e *emitter) applyOptions(option string, opts jen.Code) jen.Code {
	for _, o := range e.m.Options {
		if o.Option.Name == option {
			return jen.Id(applyFunc(o)).Call(opts)
		}
	}
	return opts
}

// unusableResults are what a method returns without an engine: zero values,
// the unusable error for an error result, and for a surface result a
// wrapper that carries that error on.
func (e *emitter) unusableResults(m model.Method, r string) []jen.Code {
	out := make([]jen.Code, 0, len(m.Results))
	for _, res := range m.Results {
		switch {
		case res.Type.Kind == model.Error:
			out = append(out, jen.Id(r).Dot("unusable").Call())
		case res.Type.Kind == model.Declared && e.isSurface(res.Type.Name):
			out = append(out, jen.Op("&").Id(res.Type.Name).Values(jen.Dict{jen.Id(errField): jen.Id(r).Dot("unusable").Call()}))
		default:
			out = append(out, e.zeroValue(res.Type))
		}
	}
	return out
}

// facade emits sdk/go/facade_gen.go: the package functions that run on
// Default().
func (e *emitter) facade() error {
	f := e.newFile(e.l.SDK)
	first := true
	for _, m := range e.m.Package.Methods {
		if m.Kind != model.OnDefault {
			continue
		}
		if !first {
			f.Line()
		}
		first = false
		f.Add(doc(m.Doc))
		f.Func().Id(m.Name).Add(e.signature(m.Params, m.Results, m.Variadic)).Block(
			jen.Return(jen.Id("Default").Call().Dot(m.Name).Call(args(m.Params, m.Variadic)...)),
		)
	}
	return e.save(e.l.SDK, "facade_gen.go", f)
}

// glue emits sdk/go/glue_gen.go: for every hand-written package function,
// a blank variable of the spec's function type assigned the function, so
// the compiler rejects glue that drifts from the spec.
func (e *emitter) glue() error {
	f := e.newFile(e.l.SDK)
	f.Add(doc("The hand-written functions of the spec's package surface, checked against it by the compiler."))
	f.Var().DefsFunc(func(g *jen.Group) {
		for _, m := range e.m.Package.Methods {
			if m.Kind == model.Glue {
				g.Id("_").Func().Add(e.signature(m.Params, m.Results, m.Variadic)).Op("=").Id(m.Name)
			}
		}
	})
	return e.save(e.l.SDK, "glue_gen.go", f)
}
