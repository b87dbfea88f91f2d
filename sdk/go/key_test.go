package lock

import (
	"errors"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestKeyEncoding(t *testing.T) {
	type point struct {
		X, Y int
	}
	type tenant string
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	n := 7
	cases := []struct {
		parts []any
		want  string
	}{
		{nil, ""},
		{[]any{"invoice", 7}, "invoice:#7"},
		{[]any{"invoice_7"}, "invoice_7"},
		{[]any{"invoice", "7"}, "invoice:7"},
		{[]any{"a:b", "c)d", "50%"}, "a%3Ab:c%29d:50%25"},
		{[]any{"#tag", "a#b"}, "%23tag:a#b"},
		{[]any{""}, `#""`},
		{[]any{"line\nbreak\x00"}, "line%0Abreak%00"},
		{[]any{"caf\xe9", "café"}, "caf%E9:café"},
		{[]any{int8(-3), uint64(math.MaxUint64), int64(7), uint8(7)}, "#-3:#18446744073709551615:#7:#7"},
		{[]any{true, false}, "#true:#false"},
		{[]any{0.5, float32(0.5), math.Inf(-1), math.NaN(), math.Copysign(0, -1)}, "#f0.5:#f0.5:#f-Inf:#fNaN:#f-0"},
		{[]any{complex(1, -2)}, "#c(1-2i)"},
		{[]any{[]byte{0x0a, 0xff}, [2]byte{1, 2}, []byte(nil)}, "#x0aff:#x0102:#x"},
		{[]any{nil, (*int)(nil), error(nil)}, "#nil:#nil:#nil"},
		{[]any{&n}, "#7"},
		{[]any{tenant("acme")}, "acme"},
		{[]any{[]any{"a", 1}, []string(nil)}, "#(a:#1):#()"},
		{[]any{point{1, 2}}, "#(#1:#2)"},
		{[]any{map[string]int{"b": 2, "a": 1}}, "#m(a:#1:b:#2)"},
		{[]any{at}, "#t(time.Time:2024-05-06T07%3A08%3A09Z)"},
		{[]any{netip.MustParseAddr("::1")}, "#t(net/netip.Addr:%3A%3A1)"},
	}
	for _, c := range cases {
		if got := Key(c.parts...); got != c.want {
			t.Errorf("Key(%#v) = %q, want %q", c.parts, got, c.want)
		}
	}
}

// The examples: structure is part of the identity.
func TestKeyDistinguishesStructure(t *testing.T) {
	keys := map[string][]any{}
	for _, parts := range [][]any{
		{"invoice", 7},
		{"invoice_7"},
		{"invoice", "7"},
		{"invoice:7"},
		{"invoice", 7.0},
		{"invoice", []any{7}},
		{"invoice", ""},
		{"invoice"},
		{""},
		{},
		{nil},
		{"#nil"},
		{[]byte("7")},
		{"invoice", true},
		{"invoice", "#true"},
	} {
		k := Key(parts...)
		if prev, dup := keys[k]; dup {
			t.Errorf("Key(%#v) = Key(%#v) = %q", parts, prev, k)
		}
		keys[k] = parts
	}
}

// panicky's MarshalText panics: Key must survive it and fall back to the
// value's structure.
type panicky struct{ n int }

func (p *panicky) MarshalText() ([]byte, error) { return []byte(strconv.Itoa(p.n)), nil }

// failing's MarshalText fails.
type failing struct{ n int }

func (failing) MarshalText() ([]byte, error) { return nil, errors.New("no text") }

func TestKeyNeverPanics(t *testing.T) {
	type node struct {
		Left, Right *node
		Name        string
	}
	cyclic := &node{Name: "root"}
	cyclic.Left, cyclic.Right = cyclic, cyclic // 2^depth paths without the budget
	selfMap := map[string]any{}
	selfMap["me"] = selfMap
	selfSlice := []any{nil}
	selfSlice[0] = selfSlice
	ch := make(chan int)
	fn := func() {}
	values := []any{
		cyclic, selfMap, selfSlice, ch, fn, (*panicky)(nil), &panicky{3}, failing{4},
		struct{ unexported time.Time }{}, map[any]int{math.NaN(): 1, math.NaN(): 2},
		[]any{(chan int)(nil), (func())(nil)}, new(any),
	}
	for _, v := range values {
		k := Key("x", v)
		if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
			t.Errorf("Key(%T) = %q: not valid UTF-8 without NUL", v, k)
		}
		if again := Key("x", v); again != k && !hasIdentity(v) {
			t.Errorf("Key(%T) is not deterministic: %q then %q", v, k, again)
		}
	}
	if k := Key(cyclic); !strings.Contains(k, "#deep") {
		t.Errorf("Key(cyclic) = %.80q..., want the #deep marker", k)
	}
	if k, want := Key(&panicky{3}), "#t(*lock.panicky:3)"; k != want {
		t.Errorf("Key(&panicky{3}) = %q, want %q", k, want)
	}
	if k, want := Key((*panicky)(nil)), "#nil"; k != want {
		t.Errorf("Key((*panicky)(nil)) = %q, want %q (MarshalText panicked)", k, want)
	}
	if k, want := Key(failing{4}), "#(#4)"; k != want {
		t.Errorf("Key(failing{4}) = %q, want %q (MarshalText failed)", k, want)
	}
	if k := Key(ch); !strings.HasPrefix(k, "#chan@") || k == Key(make(chan int)) {
		t.Errorf("Key(chan) = %q: want a per-channel identity", k)
	}
}

// hasIdentity reports whether Key encodes v by identity rather than value.
func hasIdentity(v any) bool {
	switch v.(type) {
	case chan int, func():
		return true
	}
	return false
}

// FuzzKey checks, over pairs of part sequences built from the fuzzer's
// inputs, that Key is injective (different sequences, different keys),
// deterministic, and always valid UTF-8 without NUL.
func FuzzKey(f *testing.F) {
	f.Add("invoice", "7", []byte(nil), int64(7), 0.0, uint16(2|2<<2), uint16(2|1<<5))
	f.Add("invoice_7", "", []byte("7"), int64(-1), math.Inf(1), uint16(1), uint16(3|4<<2|6<<5|5<<8))
	f.Fuzz(func(t *testing.T, s1, s2 string, b []byte, n int64, x float64, programA, programC uint16) {
		in := fuzzInputs{s1, s2, b, n, x}
		a, c := in.parts(programA), in.parts(programC)
		ka, kc := Key(a...), Key(c...)
		for _, k := range []string{ka, kc} {
			if !utf8.ValidString(k) || strings.IndexByte(k, 0) >= 0 {
				t.Fatalf("Key gave %q: not valid UTF-8 without NUL", k)
			}
		}
		if again := Key(a...); again != ka {
			t.Fatalf("Key(%#v) is not deterministic: %q then %q", a, ka, again)
		}
		if same := sameParts(a, c); same != (ka == kc) {
			t.Fatalf("Key(%#v) = %q, Key(%#v) = %q, but the sequences are same=%v", a, ka, c, kc, same)
		}
	})
}

// fuzzInputs are the fuzzer's values, from which parts are chosen.
type fuzzInputs struct {
	s1, s2 string
	b      []byte
	n      int64
	x      float64
}

// parts builds up to three parts from program: two bits of count, then
// three bits per part choosing what it is.
func (in fuzzInputs) parts(program uint16) []any {
	count := int(program & 3)
	parts := make([]any, 0, count)
	for i := range count {
		parts = append(parts, in.part(uint8(program>>(2+3*i))&7))
	}
	return parts
}

func (in fuzzInputs) part(choice uint8) any {
	switch choice {
	case 0:
		return in.s1
	case 1:
		return in.s2
	case 2:
		return in.n
	case 3:
		return int(in.n) // the same number as in.n: the same part
	case 4:
		return in.b
	case 5:
		return in.x
	case 6:
		return []any{in.s1, in.n}
	}
	return nil
}

// sameParts is Key's documented equality, written independently of Key:
// integers are equal by value whatever their type, floats by value with
// all NaNs equal and -0 apart from +0, byte slices by content (nil is
// empty), lists element by element.
func sameParts(a, b []any) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if canonical(a[i]) != canonical(b[i]) {
			return false
		}
	}
	return true
}

func canonical(p any) string {
	switch v := p.(type) {
	case nil:
		return "nil"
	case string:
		return "s" + v
	case int:
		return "i" + strconv.FormatInt(int64(v), 10)
	case int64:
		return "i" + strconv.FormatInt(v, 10)
	case []byte:
		return "b" + string(v)
	case float64:
		if math.IsNaN(v) {
			return "fNaN"
		}
		return "f" + strconv.FormatUint(math.Float64bits(v), 16)
	case []any:
		var sb strings.Builder
		sb.WriteString("l")
		for _, e := range v {
			c := canonical(e)
			sb.WriteString(strconv.Itoa(len(c)) + ":" + c)
		}
		return sb.String()
	}
	panic("canonical: unexpected part type") // the fuzz program makes only the types above
}

func BenchmarkKey(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Key("invoice", 12345, "tenant:acme")
	}
}

func TestKeyOfAPointerIsKeyOfItsValue(t *testing.T) {
	at := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if Key(at) != Key(&at) {
		t.Fatalf("Key(t) = %q but Key(&t) = %q", Key(at), Key(&at))
	}
	n := 7
	if Key(n) != Key(&n) {
		t.Fatalf("Key(7) = %q but Key(&7) = %q", Key(n), Key(&n))
	}
}
