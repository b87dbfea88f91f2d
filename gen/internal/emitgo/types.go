package emitgo

import (
	"fmt"
	"time"

	"github.com/dave/jennifer/jen"

	"github.com/zerotal/lock/gen/internal/model"
)

// goType renders a spec type for code in package t. Declared API types
// are the SDK's (surfaces by pointer), contract types are the driver
// package's; jennifer leaves out the qualifier inside the declaring
// package.
func (e *emitter) goType(t model.Type) *jen.Statement {
	switch t.Kind {
	case model.Bool:
		return jen.Bool()
	case model.Int:
		return jen.Int()
	case model.Uint64:
		return jen.Uint64()
	case model.String:
		return jen.String()
	case model.Duration:
		return jen.Qual("time", "Duration")
	case model.Time:
		return jen.Qual("time", "Time")
	case model.Context:
		return jen.Qual("context", "Context")
	case model.Error:
		return jen.Error()
	case model.Any:
		return jen.Any()
	case model.EmptyStruct:
		return jen.Struct()
	case model.Func:
		return jen.Func().Add(e.signature(t.Params, t.Results, t.Variadic))
	case model.Chan:
		switch t.Dir {
		case model.RecvOnly:
			return jen.Op("<-").Chan().Add(e.goType(*t.Elem))
		case model.SendOnly:
			return jen.Chan().Op("<-").Add(e.goType(*t.Elem))
		}
		return jen.Chan().Add(e.goType(*t.Elem))
	case model.Pointer:
		return jen.Op("*").Add(e.goType(*t.Elem))
	case model.Extern:
		return jen.Qual(t.Ref.Path, t.Ref.Name)
	case model.Declared:
		if t.Scope == model.ScopeContract {
			return jen.Qual(e.l.Driver.Path, t.Name)
		}
		if e.isSurface(t.Name) {
			return jen.Op("*").Qual(e.l.SDK.Path, t.Name)
		}
		return jen.Qual(e.l.SDK.Path, t.Name)
	}
	panic(fmt.Sprintf("emitgo: type kind %d reached the emitter", t.Kind)) // the model builder rejects these
}

// signature renders parameters and results, grouping neighbours of one type
// as gofmt users write them: (ctx context.Context, key, owner string).
func (e *emitter) signature(params, results []model.Param, variadic bool) *jen.Statement {
	return jen.Params(e.paramList(params, variadic)...).Params(e.paramList(results, false)...)
}

func (e *emitter) paramList(ps []model.Param, variadic bool) []jen.Code {
	var out []jen.Code
	for i := 0; i < len(ps); {
		typ := e.goType(ps[i].Type)
		if ps[i].Name == "" {
			out = append(out, typ)
			i++
			continue
		}
		j := i + 1
		isLast := func(k int) bool { return variadic && k == len(ps)-1 }
		for j < len(ps) && ps[j].Type.Equal(ps[i].Type) && !isLast(j) && !isLast(i) {
			j++
		}
		names := make([]jen.Code, 0, j-i)
		for _, p := range ps[i:j] {
			names = append(names, jen.Id(p.Name))
		}
		if isLast(i) {
			typ = jen.Op("...").Add(typ)
		}
		out = append(out, jen.List(names...).Add(typ))
		i = j
	}
	return out
}

// args renders the arguments that pass a method's parameters on, spreading
// a variadic one.
func args(ps []model.Param, variadic bool) []jen.Code {
	out := make([]jen.Code, len(ps))
	for i, p := range ps {
		out[i] = jen.Id(p.Name)
		if variadic && i == len(ps)-1 {
			out[i] = jen.Id(p.Name).Op("...")
		}
	}
	return out
}

// durationExpr renders a duration the way a person writes it:
// time.Millisecond, 100 * time.Millisecond.
func durationExpr(d time.Duration) *jen.Statement {
	units := []struct {
		name string
		d    time.Duration
	}{
		{"Hour", time.Hour}, {"Minute", time.Minute}, {"Second", time.Second},
		{"Millisecond", time.Millisecond}, {"Microsecond", time.Microsecond},
	}
	for _, u := range units {
		if d != 0 && d%u.d == 0 {
			if d == u.d {
				return jen.Qual("time", u.name)
			}
			return jen.Lit(int(d/u.d)).Op("*").Qual("time", u.name)
		}
	}
	return jen.Qual("time", "Duration").Call(jen.Lit(int(d)))
}

// nonZero renders the test that x is not the zero value of kind k.
func nonZero(x *jen.Statement, k model.Kind) *jen.Statement {
	switch k {
	case model.Bool:
		return x
	case model.String:
		return x.Op("!=").Lit("")
	case model.Int, model.Uint64, model.Duration:
		return x.Op("!=").Lit(0)
	case model.Time:
		return jen.Op("!").Add(x).Dot("IsZero").Call()
	}
	return x.Op("!=").Nil()
}

func (e *emitter) isSurface(name string) bool {
	return e.surface(name) != nil
}

func (e *emitter) surface(name string) *model.Surface {
	for i := range e.m.Surfaces {
		if e.m.Surfaces[i].Name == name {
			return &e.m.Surfaces[i]
		}
	}
	return nil
}

// inputError renders &E{Field: field, Reason: reason} for the spec's
// //lock:input error.
func (e *emitter) inputError(field string, reason jen.Code) (jen.Code, error) {
	in, ok := e.m.InputError()
	if !ok {
		return nil, fmt.Errorf("emitgo: the generated code reports bad input, and no error type of the spec is marked //lock:input")
	}
	return jen.Op("&").Id(in.Name).Values(
		jen.Id("Field").Op(":").Lit(field),
		jen.Id("Reason").Op(":").Add(reason),
	), nil
}
