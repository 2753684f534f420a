package source

import (
	"os"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/diag"
)

// TestYAMLErrorLines: a YAML syntax error names the line where it is, for
// every class of error, in the demo's own team-a/servicebus.yaml (the
// newcomer's file: `maxDeliveryCount: [10` on line 16 read "line 15", a
// one-space indentation on line 15 "line 6", a comment). Each case edits
// one or more lines of the file; want is the line the error must name.
func TestYAMLErrorLines(t *testing.T) {
	orig, err := os.ReadFile("../examples/onboarding/team-a/servicebus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(orig), "\n")
	if !strings.HasPrefix(lines[15], "  maxDeliveryCount: 10") || !strings.HasPrefix(lines[14], "  lockDuration: PT1M") {
		t.Fatalf("servicebus.yaml changed: line 15 %q, line 16 %q", lines[14], lines[15])
	}
	for _, tc := range []struct {
		name  string
		edits map[int]string // 1-based line → its new text (without newline)
		want  int
		msg   string
	}{
		{"unclosed flow sequence", map[int]string{16: "  maxDeliveryCount: [10"}, 16, "did not find expected ',' or ']'"},
		{"unclosed flow mapping", map[int]string{16: "  maxDeliveryCount: {max: 10"}, 16, "did not find expected ',' or '}'"},
		{"flow sequence closed twice", map[int]string{16: "  maxDeliveryCount: [10]]"}, 16, "did not find expected key"},
		{"one space too few", map[int]string{15: " lockDuration: PT1M"}, 15, "did not find expected key"},
		{"one space too many", map[int]string{16: "   maxDeliveryCount: 10"}, 16, "mapping values are not allowed in this context"},
		{"a key less indented than its siblings, later", map[int]string{18: " defaultMessageTimeToLive: P14D"}, 18, "did not find expected key"},
		{"tab indentation", map[int]string{15: "\tlockDuration: PT1M"}, 15, "found a tab character that violates indentation"},
		// The string runs on to the next "---".
		{"unterminated double quote", map[int]string{16: `  maxDeliveryCount: "10`}, 16, "found unexpected document indicator"},
		{"unterminated single quote", map[int]string{16: `  maxDeliveryCount: '10`}, 16, "found unexpected document indicator"},
		{"unterminated quote in the last document", map[int]string{39: `    name: "team-a-events`}, 39, "found unexpected end of stream"},
		{"mapping values not allowed", map[int]string{16: "  maxDeliveryCount: max: 10"}, 16, "mapping values are not allowed in this context"},
		{"a sequence item among keys", map[int]string{16: "  - maxDeliveryCount"}, 16, "did not find expected key"},
		{"a character that cannot start a token", map[int]string{16: "  maxDeliveryCount: @10"}, 16, "found character that cannot start any token"},
		{"unknown alias", map[int]string{16: "  maxDeliveryCount: *ten"}, 16, "unknown anchor 'ten' referenced"},
		{"a key dedented after a block scalar", map[int]string{16: "  description: |\n    one\n maxDeliveryCount: 10"}, 18, "did not find expected key"},
		{"duplicate key", map[int]string{17: "  maxDeliveryCount: 5"}, 17, `duplicate key "maxDeliveryCount" (first at line 16)`},
		{"in the second document", map[int]string{28: "  defaultMessageTimeToLive: [P7D"}, 28, "did not find expected ',' or ']'"},
		{"on the first line", map[int]string{1: "a: b: c"}, 1, "mapping values are not allowed in this context"},
		{"a multi-line flow sequence before the error", map[int]string{13: "  tags: [a,\n    b]\n  owner:", 16: "  maxDeliveryCount: [10"}, 18, "did not find expected ',' or ']'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited := append([]string(nil), lines...)
			for n, text := range tc.edits {
				edited[n-1] = text + "\n"
			}
			_, err := ParseFile("team-a/servicebus.yaml", []byte(strings.Join(edited, "")))
			l := diag.AsList(err)
			if len(l) == 0 {
				t.Fatalf("no error")
			}
			if l[0].Line != tc.want || !strings.Contains(l[0].Error(), tc.msg) {
				t.Errorf("got %v, want line %d: %s", err, tc.want, tc.msg)
			}
		})
	}
}
