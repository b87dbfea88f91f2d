package emitgo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dave/jennifer/jen"
)

func TestDocComment(t *testing.T) {
	long := strings.Repeat("word ", 30) + "end."
	got := fmt.Sprintf("%#v", doc("First line.\n\n\tcode block that is long enough to pass the width limit of a doc comment line\n"+long))
	for _, want := range []string{
		"// First line.\n//\n",
		"//\tcode block that is long enough to pass the width limit of a doc comment line\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("doc rendered\n%s\nwithout %q", got, want)
		}
	}
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if !strings.HasPrefix(line, "//\t") && len(line) > len("// ")+docWidth {
			t.Errorf("prose line not wrapped: %q", line)
		}
	}
}

func TestNaming(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Manager", "m"}, {"ManagedLock", "l"}, {"Service", "s"}, {"HTTPServer", "s"},
	} {
		if got := receiver(c.in); got != c.want {
			t.Errorf("receiver(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := rename("OK means success.", "OK", "CodeOK"); got != "CodeOK means success." {
		t.Errorf("rename = %q", got)
	}
	if got := article("Option") + ", " + article("ManagerOption"); got != "an Option, a ManagerOption" {
		t.Errorf("article = %q", got)
	}
}

func TestDurationExpr(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Millisecond:        "time.Millisecond",
		100 * time.Millisecond:  "100 * time.Millisecond",
		1500 * time.Millisecond: "1500 * time.Millisecond",
		2 * time.Hour:           "2 * time.Hour",
		7:                       "time.Duration(7)",
	} {
		if got := fmt.Sprintf("%#v", jen.Null().Add(durationExpr(d))); got != want {
			t.Errorf("durationExpr(%v) = %s, want %s", d, got, want)
		}
	}
}
