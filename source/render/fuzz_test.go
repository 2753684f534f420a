package render

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
)

// FuzzSubstitute: substitution never panics; an error is a *diag.Error of one
// of the two kinds, on a line of the document; without '$' the text is
// returned as it is.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"a: ${A}\n", "a: ${A:=x}\nb: $${B}\n", "${A:-${B}}", "${", "$$", "${A^^}", "a: ${B\n"} {
		f.Add(s, true)
	}
	seeds, _ := filepath.Glob("testdata/*/*/*.yaml")
	for _, p := range seeds {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(string(b), false)
		}
	}
	vars := Vars{"A": "1", "B": "two words", "TEAM_MI_PREFIX": "mid"}
	f.Fuzz(func(t *testing.T, text string, strict bool) {
		out, err := Substitute("f.yaml", 5, text, vars, strict)
		if err != nil {
			var de *diag.Error
			if !errors.As(err, &de) || !(errors.Is(err, ErrUnsetVariable) || errors.Is(err, ErrBadSubstitution)) {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			if de.Line < 5 || de.Line > 5+strings.Count(text, "\n") {
				t.Fatalf("line %d outside the document", de.Line)
			}
			return
		}
		if !strings.Contains(text, "$") && out != text {
			t.Fatalf("text without '$' changed")
		}
	})
}
