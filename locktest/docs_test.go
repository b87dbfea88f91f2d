package locktest_test

import (
	"os"
	"strings"
	"testing"
)

// docs/testing.md shows the Examples of this package as they are
// compiled and run: every line of each Example's body is in it.
func TestDocsShowTheExamples(t *testing.T) {
	checkDocShowsExamples(t, "../docs/testing.md", "example_test.go")
}

func checkDocShowsExamples(t *testing.T, doc, examples string) {
	t.Helper()
	d, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(examples)
	if err != nil {
		t.Fatal(err)
	}
	in := false
	for _, line := range strings.Split(string(src), "\n") {
		switch {
		case strings.HasPrefix(line, "func Example"):
			in = true
		case line == "}":
			in = false
		case in && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "// Output"):
			if !strings.Contains(string(d), strings.TrimSpace(line)) {
				t.Errorf("%s does not show this line of %s's Examples:\n\t%s", doc, examples, strings.TrimSpace(line))
			}
		}
	}
}
