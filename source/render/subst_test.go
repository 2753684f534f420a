package render

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
)

func TestSubstitute(t *testing.T) {
	vars := Vars{"CLUSTER_OIDC": "https://oidc.example/abc/", "EMPTY": "", "N": "3", "TEAM": "team-a"}
	tests := []struct {
		name   string
		in     string
		strict bool
		want   string
	}{
		{"plain", "issuer: ${CLUSTER_OIDC}\n", false, "issuer: https://oidc.example/abc/\n"},
		{"inside a word", "name: ${TEAM}-identity\n", false, "name: team-a-identity\n"},
		{"several on a line", "x: ${TEAM}/${N}/${TEAM}\n", true, "x: team-a/3/team-a\n"},
		{"quotes kept", "count: \"${N}\"\n", false, "count: \"3\"\n"},
		{"unset is empty", "x: a${MISSING}b\n", false, "x: ab\n"},
		{"set to empty", "x: a${EMPTY}b\n", true, "x: ab\n"},
		{":= default when unset", "x: ${MISSING:=dflt}\n", true, "x: dflt\n"},
		{":= default when empty", "x: ${EMPTY:=dflt}\n", true, "x: dflt\n"},
		{":= value when set", "x: ${TEAM:=dflt}\n", true, "x: team-a\n"},
		{":- default when unset", "x: ${MISSING:-dflt}\n", true, "x: dflt\n"},
		{":- value when set", "x: ${TEAM:-dflt}\n", true, "x: team-a\n"},
		{"= default when unset", "x: ${MISSING=dflt}\n", true, "x: dflt\n"},
		{"= value when set", "x: ${TEAM=dflt}\n", true, "x: team-a\n"},
		{"default with spaces and colons", "x: ${MISSING:=a b:c}\n", true, "x: a b:c\n"},
		{"nested default", "x: ${MISSING:=${TEAM}}\n", true, "x: team-a\n"},
		{"$${} escape", "x: $${TEAM}\n", true, "x: ${TEAM}\n"},
		{"$$ escape in text", "password: pa$$word\n", false, "password: pa$word\n"},
		{"bare $VAR untouched", "x: $TEAM and $\n", true, "x: $TEAM and $\n"},
		{"no dollar", "x: y\n", true, "x: y\n"},
		{"upper-case function", "x: ${TEAM^^}\n", true, "x: TEAM-A\n"},
		{"multi-line keeps lines", "a: ${TEAM}\n# ${N}\nb: |\n  ${TEAM}\n", true, "a: team-a\n# 3\nb: |\n  team-a\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Substitute("f.yaml", 1, tt.in, vars, tt.strict)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSubstituteErrors(t *testing.T) {
	vars := Vars{"TEAM": "team-a"}
	tests := []struct {
		name   string
		in     string
		line   int // first line of the document
		strict bool
		want   string // diag.Error text
		is     error
	}{
		{"strict unset", "a: ${TEAM}\nb: ${CLUSTER_OIDC}\n", 1, true,
			"f.yaml:2: ${CLUSTER_OIDC}: variable is not set and has no default (strict substitution; set CLUSTER_OIDC with --substitute CLUSTER_OIDC=... or in a --substitute-from ConfigMap or Secret, or write ${CLUSTER_OIDC:=default}; $${CLUSTER_OIDC} is a literal)",
			ErrUnsetVariable},
		{"strict unset in a later document", "---\nkind: X\nc: ${NOPE}\n", 10, true,
			"f.yaml:12: ${NOPE}: variable is not set and has no default (strict substitution; set NOPE with --substitute NOPE=... or in a --substitute-from ConfigMap or Secret, or write ${NOPE:=default}; $${NOPE} is a literal)",
			ErrUnsetVariable},
		{"strict unset with a transformation", "a: ${NOPE^^}\n", 1, true,
			"f.yaml:1: ${NOPE}: variable is not set and has no default (strict substitution; set NOPE with --substitute NOPE=... or in a --substitute-from ConfigMap or Secret, or write ${NOPE:=default}; $${NOPE} is a literal)",
			ErrUnsetVariable},
		{"unterminated", "a: ok\nb: ${TEAM\n", 1, false,
			"f.yaml:2: ${TEAM: bad substitution: missing closing brace (write $${ for a literal ${)",
			ErrBadSubstitution},
		{"bad name", "a: ${}\n", 1, false,
			"f.yaml:1: ${}: bad substitution: unable to parse variable name (write $${ for a literal ${)",
			ErrBadSubstitution},
		{"bad substitution in strict", "a: ${TEAM}\nb: ${-x}\n", 3, true,
			"f.yaml:4: ${-x}: bad substitution: unable to parse variable name (write $${ for a literal ${)",
			ErrBadSubstitution},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Substitute("f.yaml", tt.line, tt.in, vars, tt.strict)
			var de *diag.Error
			if !errors.As(err, &de) {
				t.Fatalf("want *diag.Error, got %T %v", err, err)
			}
			if diff := cmp.Diff(tt.want, de.Error()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("errors.Is(%v) = false", tt.is)
			}
		})
	}
}

func TestSplitDocuments(t *testing.T) {
	in := "# head\na: 1\n---\nb: 2\n--- # c\nc: 3\n----\nd: 4\n---\n"
	docs := splitDocuments([]byte(in))
	type d struct {
		Text string
		Line int
	}
	var got []d
	var joined strings.Builder
	for _, x := range docs {
		got = append(got, d{x.text, x.line})
		joined.WriteString(x.text)
	}
	want := []d{{"# head\na: 1\n", 1}, {"---\nb: 2\n", 3}, {"--- # c\nc: 3\n----\nd: 4\n", 5}, {"---\n", 9}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if joined.String() != in {
		t.Errorf("documents do not join back to the file")
	}
}

func TestDisabled(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n", true},
		{"metadata:\n  labels:\n    kustomize.toolkit.fluxcd.io/substitute: disabled\n", true},
		{"metadata:\n  annotations:\n    kustomize.toolkit.fluxcd.io/substitute: enabled\n", false},
		{"# kustomize.toolkit.fluxcd.io/substitute: disabled\nmetadata: {}\n", false},
		{"metadata: {name: x}\n", false},
	}
	for _, tt := range tests {
		if got := disabled(tt.in); got != tt.want {
			t.Errorf("disabled(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestParseRef(t *testing.T) {
	tests := []struct {
		in      string
		want    Ref
		wantErr string
	}{
		{"platform/platform-vars", Ref{Namespace: "platform", Name: "platform-vars"}, ""},
		{"vars", Ref{Namespace: "default", Name: "vars"}, ""},
		{"Secret/platform/creds,optional", Ref{Kind: "Secret", Namespace: "platform", Name: "creds", Optional: true}, ""},
		{"configmap/p/v", Ref{Kind: "ConfigMap", Namespace: "p", Name: "v"}, ""},
		{"Deployment/p/v", Ref{}, `substitute-from "Deployment/p/v": kind "Deployment": want ConfigMap or Secret`},
		{"p/v,maybe", Ref{}, `substitute-from "p/v,maybe": unknown option "maybe" (only "optional")`},
		{"a/b/c/d", Ref{}, `substitute-from "a/b/c/d": want [ConfigMap/|Secret/]namespace/name[,optional]`},
		{"/v", Ref{}, `substitute-from "/v": empty namespace or name`},
	}
	for _, tt := range tests {
		got, err := ParseRef(tt.in)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("ParseRef(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseRef(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseRef(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
		if back, _ := ParseRef(got.String()); back != got {
			t.Errorf("ParseRef(String()) = %+v, want %+v", back, got)
		}
	}
}

func TestParseVars(t *testing.T) {
	got, err := ParseVars([]string{"A=1", "B=x=y", "C="})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"A": "1", "B": "x=y", "C": ""}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, bad := range []string{"A", "1A=x", "A-B=x"} {
		if _, err := ParseVars([]string{bad}); err == nil {
			t.Errorf("ParseVars(%q) succeeded", bad)
		}
	}
}
