package access_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/access"
)

// FuzzParsePolicy: the parser never panics; an error is always a
// *PolicyError naming the file and a line of the input; a parsed policy
// answers every question without panicking, and a deny line it holds is
// never overridden.
func FuzzParsePolicy(f *testing.F) {
	if b, err := os.ReadFile("testdata/policy.csv"); err == nil {
		f.Add(string(b))
	}
	f.Add("p, role:x, namespaces, read, team-*\ng, group:a, role:x\ndefault, role:x\n")
	f.Add("p, x, *, *, [a-z]*, deny\n")
	f.Add("g, anonymous, role:admin\n")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := access.ParsePolicy("f.csv", []byte(in))
		if err != nil {
			var pe *access.PolicyError
			if !errors.As(err, &pe) || pe.File != "f.csv" || pe.Line < 1 || pe.Line > strings.Count(in, "\n")+2 {
				t.Fatalf("error %v: want a *PolicyError naming f.csv and a line of the input", err)
			}
			return
		}
		ids := []access.Identity{
			{Kind: access.Anonymous},
			{Kind: access.User, Name: "x", Subject: "a", Groups: []string{"a", "x"}},
			{Kind: access.Token, Subject: "x"},
		}
		for _, id := range ids {
			for _, ns := range []string{"a", "x", "team-a", ""} {
				p.Rights(id, ns)
				for _, r := range access.Rights {
					s := p.Scope(id, r)
					_ = s.Key() + s.String()
					if s.All() && !s.Allows(ns) {
						t.Fatalf("scope %s is all but refuses %q", s, ns)
					}
				}
			}
		}
	})
}
