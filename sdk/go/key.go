package lock

import (
	"bytes"
	"encoding"
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Key's bounds on a value's shape: how deep it follows pointers,
// interfaces and nested values, and how many values it encodes in all. They
// keep a cyclic or self-sharing value from making Key recurse forever or
// blow up; any value that reaches them gives a key far over the engine's
// 1 KiB limit anyway.
const (
	maxKeyDepth  = 32
	maxKeyValues = 4096
)

// encodeKey is Key.
func encodeKey(parts []any) string {
	if len(parts) == 0 {
		return ""
	}
	e := keyEncoder{budget: maxKeyValues}
	b := make([]byte, 0, 16*len(parts))
	for i, p := range parts {
		if i > 0 {
			b = append(b, ':')
		}
		b = e.part(b, p)
	}
	return string(b)
}

// keyEncoder encodes one key's parts; budget is how many more values it
// may encode by reflection.
type keyEncoder struct {
	budget int
}

// part encodes one part, taking the common types without reflection.
func (e *keyEncoder) part(b []byte, p any) []byte {
	switch v := p.(type) {
	case nil:
		return append(b, "#nil"...)
	case string:
		return appendString(b, v)
	case int:
		return strconv.AppendInt(append(b, '#'), int64(v), 10)
	case int64:
		return strconv.AppendInt(append(b, '#'), v, 10)
	case int32:
		return strconv.AppendInt(append(b, '#'), int64(v), 10)
	case uint:
		return strconv.AppendUint(append(b, '#'), uint64(v), 10)
	case uint64:
		return strconv.AppendUint(append(b, '#'), v, 10)
	case uint32:
		return strconv.AppendUint(append(b, '#'), uint64(v), 10)
	case bool:
		return strconv.AppendBool(append(b, '#'), v)
	case float64:
		return appendFloat(append(b, "#f"...), v)
	case []byte:
		return appendHex(append(b, "#x"...), v)
	}
	return e.value(b, reflect.ValueOf(p), 0)
}

// value encodes any value by its kind.
func (e *keyEncoder) value(b []byte, v reflect.Value, depth int) []byte {
	if depth > maxKeyDepth || e.budget <= 0 {
		return append(b, "#deep"...)
	}
	e.budget--
	// A pointer is the value it points to, text-encoded values included:
	// Key(t) and Key(&t) are the same part.
	for v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Type().Implements(textMarshaler) {
		v = v.Elem()
	}
	if out, ok := appendText(b, v); ok {
		return out
	}
	switch v.Kind() {
	case reflect.Invalid:
		return append(b, "#nil"...)
	case reflect.String:
		return appendString(b, v.String())
	case reflect.Bool:
		return strconv.AppendBool(append(b, '#'), v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(append(b, '#'), v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(append(b, '#'), v.Uint(), 10)
	case reflect.Float32, reflect.Float64:
		return appendFloat(append(b, "#f"...), v.Float())
	case reflect.Complex64, reflect.Complex128:
		return append(append(b, "#c"...), strconv.FormatComplex(v.Complex(), 'g', -1, 128)...)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return append(b, "#nil"...)
		}
		return e.value(b, v.Elem(), depth+1)
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			b = append(b, "#x"...)
			for i := range v.Len() {
				b = appendHexByte(b, byte(v.Index(i).Uint()))
			}
			return b
		}
		b = append(b, "#("...)
		for i := range v.Len() {
			if i > 0 {
				b = append(b, ':')
			}
			b = e.value(b, v.Index(i), depth+1)
		}
		return append(b, ')')
	case reflect.Struct:
		b = append(b, "#("...)
		for i := range v.NumField() {
			if i > 0 {
				b = append(b, ':')
			}
			b = e.value(b, v.Field(i), depth+1)
		}
		return append(b, ')')
	case reflect.Map:
		return e.mapValue(b, v, depth)
	}
	// Func, Chan, UnsafePointer: no value to encode, only an identity.
	if v.IsNil() {
		return append(b, "#nil"...)
	}
	b = append(b, '#')
	b = append(b, v.Kind().String()...)
	b = append(b, '@')
	return strconv.AppendUint(b, uint64(v.Pointer()), 16)
}

// textMarshaler is the interface whose values Key encodes by their text.
var textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

// appendText encodes a value that can say what it is as text, reporting
// false for one that cannot (including one whose MarshalText fails or
// panics, as a nil receiver may), which is then encoded by its kind.
func appendText(b []byte, v reflect.Value) ([]byte, bool) {
	if !v.IsValid() || !v.Type().Implements(textMarshaler) || !v.CanInterface() {
		return b, false
	}
	text, ok := marshalText(v.Interface().(encoding.TextMarshaler))
	if !ok {
		return b, false
	}
	b = append(b, "#t("...)
	b = appendString(b, typeName(v.Type()))
	b = append(b, ':')
	b = appendString(b, string(text))
	return append(b, ')'), true
}

// typeName names t with its full package path, so that two packages'
// types of the same short name (x.ID, one in each) stay apart.
func typeName(t reflect.Type) string {
	if t.Name() != "" && t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name()
	}
	return t.String()
}

// marshalText calls m.MarshalText, turning a failure or a panic into false:
// Key never panics, whatever the value's methods do.
func marshalText(m encoding.TextMarshaler) (text []byte, ok bool) {
	defer func() {
		if recover() != nil {
			text, ok = nil, false
		}
	}()
	text, err := m.MarshalText()
	return text, err == nil
}

// mapValue encodes a map as its entries sorted by encoded key (then value,
// so that keys that encode alike, such as NaNs, still sort the same way
// every time).
func (e *keyEncoder) mapValue(b []byte, v reflect.Value, depth int) []byte {
	type entry struct{ k, v []byte }
	entries := make([]entry, 0, v.Len())
	for it := v.MapRange(); it.Next(); {
		k := e.value(nil, it.Key(), depth+1)
		entries = append(entries, entry{k, e.value(nil, it.Value(), depth+1)})
	}
	slices.SortFunc(entries, func(x, y entry) int {
		if c := bytes.Compare(x.k, y.k); c != 0 {
			return c
		}
		return bytes.Compare(x.v, y.v)
	})
	b = append(b, "#m("...)
	for i, en := range entries {
		if i > 0 {
			b = append(b, ':')
		}
		b = append(append(append(b, en.k...), ':'), en.v...)
	}
	return append(b, ')')
}

const upperHex = "0123456789ABCDEF"

// appendString encodes a string part: itself, with the bytes that would
// make the key ambiguous, invalid or unprintable percent-encoded.
func appendString(b []byte, s string) []byte {
	if s == "" {
		return append(b, `#""`...)
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f || c == '%' || c == ':' || c == ')' || (i == 0 && c == '#') {
				b = append(b, '%', upperHex[c>>4], upperHex[c&15])
			} else {
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, '%', upperHex[c>>4], upperHex[c&15])
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// appendHex encodes bytes as lowercase hex.
func appendHex(b, data []byte) []byte {
	for _, c := range data {
		b = appendHexByte(b, c)
	}
	return b
}

// appendHexByte encodes one byte as two lowercase hex digits.
func appendHexByte(b []byte, c byte) []byte {
	const lowerHex = "0123456789abcdef"
	return append(b, lowerHex[c>>4], lowerHex[c&15])
}

// appendFloat encodes a float in the shortest form that reads back as the
// same float64; every NaN is the same part.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) {
		return append(b, "NaN"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
