package access_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/access"
)

// TestDemoPolicy: the demo's policy gives the platform admin everything and
// alice of team-a read, sync and approve in team-a only.
func TestDemoPolicy(t *testing.T) {
	b, err := os.ReadFile("../examples/access/policy.csv")
	if err != nil {
		t.Fatal(err)
	}
	p, err := access.ParsePolicy("examples/access/policy.csv", b)
	if err != nil {
		t.Fatal(err)
	}
	adminUser := access.Identity{Kind: access.User, Subject: "admin", Name: "admin@gitaso.local", Groups: []string{"platform-admins"}}
	demoToken := access.Identity{Kind: access.Token, Subject: "demo", Name: "demo", Groups: []string{"platform-admins"}}
	aliceUser := access.Identity{Kind: access.User, Subject: "alice", Name: "alice@gitaso.local", Groups: []string{"team-a"}}
	for _, id := range []access.Identity{adminUser, demoToken} {
		if !p.Scope(id, access.Admin).All() {
			t.Errorf("%s is not admin everywhere", id)
		}
	}
	if got := p.Rights(aliceUser, "team-a"); !cmp.Equal(got, []access.Right{access.Read, access.Sync, access.Approve}) {
		t.Errorf("alice in team-a: %v", got)
	}
	if got := p.Rights(aliceUser, "platform"); len(got) != 0 {
		t.Errorf("alice in platform: %v, want none", got)
	}
}
