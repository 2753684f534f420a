package access_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/access"
)

func demoPolicy(t testing.TB) *access.Policy {
	t.Helper()
	b, err := os.ReadFile("testdata/policy.csv")
	if err != nil {
		t.Fatal(err)
	}
	p, err := access.ParsePolicy("testdata/policy.csv", b)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	alice   = access.Identity{Kind: access.User, Subject: "a1", Name: "alice@gitaso.local", Groups: []string{"team-a"}}
	admin   = access.Identity{Kind: access.User, Subject: "ad", Name: "admin@gitaso.local", Groups: []string{"platform-admins"}}
	bob     = access.Identity{Kind: access.User, Subject: "b1", Name: "bob@gitaso.local"}
	ci      = access.Identity{Kind: access.Token, Subject: "ci", Name: "ci"}
	auditor = access.Identity{Kind: access.User, Subject: "au", Name: "eve", Groups: []string{"auditors"}}
	nobody  = access.Identity{Kind: access.Anonymous}
)

func TestPolicyRights(t *testing.T) {
	p := demoPolicy(t)
	tests := []struct {
		name string
		id   access.Identity
		ns   string
		want []access.Right
	}{
		{"team member in own namespace", alice, "team-a", []access.Right{access.Read, access.Sync, access.Approve}},
		{"team member elsewhere reads by default", alice, "team-b", []access.Right{access.Read}},
		{"admin everywhere", admin, "team-b", access.Rights},
		{"user grant adds nothing over the default", bob, "team-b", []access.Right{access.Read}},
		{"token syncs", ci, "team-a", []access.Right{access.Read, access.Sync}},
		{"deny of every right wins over the default role", ci, "prod-eu", nil},
		{"deny of sync takes admin, leaves the rest", auditor, "team-a", []access.Right{access.Read, access.Approve}},
		{"anonymous has no default role", nobody, "team-a", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, p.Rights(tt.id, tt.ns)); diff != "" {
				t.Errorf("Rights(%s, %s) (-want +got):\n%s", tt.id, tt.ns, diff)
			}
		})
	}
}

func TestPolicyScope(t *testing.T) {
	p := demoPolicy(t)
	if s := p.Scope(admin, access.Read); !s.All() {
		t.Errorf("admin's read scope = %s, want every namespace", s)
	}
	s := p.Scope(alice, access.Sync)
	if s.All() || !s.Allows("team-a") || s.Allows("team-b") {
		t.Errorf("alice's sync scope = %s, want team-a only", s)
	}
	s = p.Scope(ci, access.Read)
	if s.All() || !s.Allows("team-a") || s.Allows("prod-eu") || s.String() != "* except prod-*" {
		t.Errorf("ci's read scope = %q", s)
	}
	if s := p.Scope(nobody, access.Read); !s.None() || s.Allows("team-a") {
		t.Errorf("anonymous read scope = %s, want none", s)
	}
	if a, b := p.Scope(alice, access.Read), p.Scope(bob, access.Read); a.Key() != b.Key() {
		t.Errorf("two callers of the same scope have keys %q and %q", a.Key(), b.Key())
	}
	all := access.AllowAll()
	if !all.Can(nobody, access.Admin, "x") {
		t.Error("AllowAll refused anonymous admin")
	}
	var none *access.Policy
	if none.Can(admin, access.Read, "x") {
		t.Error("a nil policy granted read")
	}
}

func TestPolicyRolesAndAnonymous(t *testing.T) {
	p, err := access.ParsePolicy("p.csv", []byte("g, anonymous, role:readonly\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Can(nobody, access.Read, "x") || p.Can(nobody, access.Sync, "x") {
		t.Errorf("anonymous bound to role:readonly: rights %v", p.Rights(nobody, "x"))
	}
	if got := demoPolicy(t).Roles(alice); !cmp.Equal(got, []string{"role:readonly", "role:team-a"}) {
		t.Errorf("Roles(alice) = %v", got)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"p, role:x, namespaces, read\n", "p.csv:1: invalid policy: a p line has 5 or 6 fields"},
		{"# c\n\np, role:x, apps, read, a\n", `p.csv:3: invalid policy: resource "apps"`},
		{"p, role:x, namespaces, write, a\n", `p.csv:1: invalid policy: right "write"`},
		{"p, role:x, namespaces, read, a/b\n", `p.csv:1: invalid policy: namespace "a/b"`},
		{"p, role:x, namespaces, read, [a\n", `p.csv:1: invalid policy: namespace "[a": bad glob`},
		{"p, role:x, namespaces, read, a, maybe\n", `p.csv:1: invalid policy: effect "maybe"`},
		{"g, alice, team-a\n", `p.csv:1: invalid policy: role "team-a": want role:NAME`},
		{"g, role:a, role:b\n", `p.csv:1: invalid policy: subject "role:a": roles are not given to roles`},
		{"p, *, namespaces, read, a\n", `p.csv:1: invalid policy: subject "*"`},
		{"x, y\n", `p.csv:1: invalid policy: statement "x"`},
		{"default, role:a\ndefault, role:b\n", "p.csv:2: invalid policy: a second default role"},
		{"\n\ndefault, role:ghost\n", "p.csv:3: invalid policy: default role role:ghost has no p line"},
		{"p, group:, namespaces, read, a\n", `p.csv:1: invalid policy: subject "group:": group: without a name`},
	}
	for _, tt := range tests {
		_, err := access.ParsePolicy("p.csv", []byte(tt.in))
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, access.ErrPolicy) {
			t.Errorf("ParsePolicy(%q) = %v, want an ErrPolicy starting %q", tt.in, err, tt.want)
		}
	}
}

func TestPolicyFileReloads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.csv")
	// Written as an operator should: a new file renamed over the old one.
	n := 0
	write := func(s string) {
		n++
		tmp := fmt.Sprintf("%s.%d", path, n)
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("default, role:readonly\n")
	f, err := access.LoadPolicyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !f.Policy().Can(alice, access.Read, "team-a") || f.Policy().Can(alice, access.Sync, "team-a") {
		t.Fatal("first policy not in force")
	}
	ctx := t.Context()
	go f.Watch(ctx, time.Millisecond, discard())
	write("p, group:team-a, namespaces, sync, team-a\n")
	waitFor(t, func() bool { return f.Policy().Can(alice, access.Sync, "team-a") })
	// A file that does not parse leaves the policy in force.
	write("p, broken\n")
	before := f.Policy()
	write("p, group:team-a, namespaces, sync, team-a\np, broken\n")
	for range 50 {
		time.Sleep(time.Millisecond)
		if f.Policy() != before {
			t.Fatal("a policy that does not parse replaced the one in force")
		}
	}
	if _, err := access.LoadPolicyFile(filepath.Join(t.TempDir(), "missing.csv")); err == nil {
		t.Error("a missing policy file loaded")
	}
}
