package forge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

const rev = "0123456789abcdef0123456789abcdef01234567"

// makePlan returns a plan creating n storage accounts and deleting del
// resource groups, each with a request body of a few fields.
func makePlan(n, del int) *planner.Plan {
	p := &planner.Plan{Revision: rev}
	for i := range n {
		name := fmt.Sprintf("st%05d", i)
		armID := "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-team/providers/Microsoft.Storage/storageAccounts/" + name
		body, _ := json.Marshal(map[string]any{"location": "westeurope", "kind": "StorageV2",
			"sku": map[string]any{"name": "Standard_LRS"}, "properties": map[string]any{"minimumTlsVersion": "TLS1_2", "allowBlobPublicAccess": false}})
		p.Resources = append(p.Resources, &planner.Resource{Namespace: "team-a", Group: "storage.azure.com", Version: "v1api20230101",
			Kind: "StorageAccount", Name: name, Action: planner.Create, ARMID: armID, APIVersion: "2023-01-01",
			Request: &planner.Request{Method: "PUT", Path: armID + "?api-version=2023-01-01", Body: body},
			File:    "team-a/storage.yaml", Line: 1 + i*20, Policy: "manage"})
	}
	for i := range del {
		armID := fmt.Sprintf("/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/rg-old-%d", i)
		p.Resources = append(p.Resources, &planner.Resource{Namespace: "team-b", Group: "resources.azure.com", Version: "v1api20200601",
			Kind: "ResourceGroup", Name: fmt.Sprintf("rg-old-%d", i), Action: planner.Delete, ARMID: armID, Policy: "manage"})
	}
	return p
}

var kinds = []string{"github", "gitlab", "azuredevops", "gitea"}

// TestStickyComment runs the life of a plan comment on every forge, each
// request checked against the forge's REST description: the first post
// creates, the next edits in place, a plan grown past the limit adds parts,
// a shrunk one deletes them, other comments are never touched, a closed
// pull request's comment is marked outdated.
func TestStickyComment(t *testing.T) {
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			f := newFake(t, kind)
			const pr = 7
			human := f.add(pr, "Looks good, but see the storage account names.", "human")
			human.Thread = human.ID
			other := f.add(pr, "<!-- gitaso-plan-prod part 1/1 -->\nthe prod plan", "gitaso-prod")
			other.Thread = other.ID
			fg := f.forge(t)
			if fg.Name() != kind {
				t.Errorf("Name() = %q", fg.Name())
			}
			const limit = 4096 // small, to split on every forge

			// 1. First post: one part per comment, summary first.
			parts := forge.Comment(makePlan(2, 1), nil, limit, forge.DefaultMarker)
			if len(parts) != 1 {
				t.Fatalf("small plan: %d parts", len(parts))
			}
			urls, err := fg.UpsertComment(ctx, pr, parts)
			if err != nil {
				t.Fatal(err)
			}
			first := f.ours(pr)
			if len(first) != 1 || len(urls) != 1 || urls[0] == "" {
				t.Fatalf("first post: %d comments, urls %v", len(first), urls)
			}
			if !strings.HasPrefix(first[0].Body, "<!-- gitaso-plan part 1/1 -->\n") || !strings.Contains(first[0].Body, "2 to create") {
				t.Errorf("first post body:\n%s", first[0].Body)
			}

			// 2. The same plan again: nothing is sent. A changed plan: the
			// same comment is edited.
			if _, err := fg.UpsertComment(ctx, pr, parts); err != nil {
				t.Fatal(err)
			}
			if n := f.callCount(f.opID("update")) + f.callCount(f.opID("create")); n != 1 {
				t.Errorf("an unchanged plan sent %d writes, want only the first create", n)
			}
			if _, err := fg.UpsertComment(ctx, pr, forge.Comment(makePlan(3, 1), nil, limit, forge.DefaultMarker)); err != nil {
				t.Fatal(err)
			}
			second := f.ours(pr)
			if len(second) != 1 || second[0].ID != first[0].ID || !strings.Contains(second[0].Body, "3 to create") {
				t.Fatalf("edit in place: %+v (first ID %d)", second, first[0].ID)
			}

			// 3. Grown past the limit: part 1 keeps its comment, parts are added.
			big := forge.Comment(makePlan(40, 2), nil, limit, forge.DefaultMarker)
			if len(big) < 3 {
				t.Fatalf("big plan: %d parts, want ≥ 3", len(big))
			}
			urls, err = fg.UpsertComment(ctx, pr, big)
			if err != nil {
				t.Fatal(err)
			}
			grown := f.ours(pr)
			if len(grown) != len(big) || len(urls) != len(big) || grown[0].ID != first[0].ID {
				t.Fatalf("grown: %d comments for %d parts, first ID %d (was %d)", len(grown), len(big), grown[0].ID, first[0].ID)
			}
			for i, c := range grown {
				if c.Body != big[i] {
					t.Errorf("part %d differs from what was posted", i+1)
				}
				if want := fmt.Sprintf("<!-- gitaso-plan part %d/%d -->\n", i+1, len(big)); !strings.HasPrefix(c.Body, want) {
					t.Errorf("part %d starts %q, want the marker %q", i+1, firstLine(c.Body), want)
				}
			}
			if !strings.Contains(grown[0].Body, "40 to create") {
				t.Errorf("part 1 lacks the summary")
			}

			// 4. Shrunk: the extra parts are deleted, part 1 edited.
			if _, err := fg.UpsertComment(ctx, pr, parts); err != nil {
				t.Fatal(err)
			}
			shrunk := f.ours(pr)
			if len(shrunk) != 1 || shrunk[0].ID != first[0].ID || shrunk[0].Body != parts[0] {
				t.Fatalf("shrunk: %+v", shrunk)
			}
			if n := f.callCount(f.opID("delete")); n != len(big)-1 {
				t.Errorf("%d deletes, want %d", n, len(big)-1)
			}

			// 5. Closed: marked outdated once.
			if err := fg.MarkOutdated(ctx, pr, "pull request closed without merging"); err != nil {
				t.Fatal(err)
			}
			if err := fg.MarkOutdated(ctx, pr, "again"); err != nil {
				t.Fatal(err)
			}
			out := f.ours(pr)
			if len(out) != 1 || !strings.Contains(out[0].Body, "**Outdated:** pull request closed without merging") || strings.Contains(out[0].Body, "again") {
				t.Errorf("outdated:\n%s", out[0].Body)
			}
			if !strings.HasPrefix(out[0].Body, "<!-- gitaso-plan part 1/1 -->\n") {
				t.Errorf("the outdated comment lost its marker line")
			}

			// Nobody else's comment was touched.
			if human.Body != "Looks good, but see the storage account names." || other.Body != "<!-- gitaso-plan-prod part 1/1 -->\nthe prod plan" || human.Deleted || other.Deleted {
				t.Errorf("foreign comments changed: %+v %+v", human, other)
			}
		})
	}
}

// TestStatus posts the statuses of a plan, a held plan and a refused
// revision, each in the forge's own words.
func TestStatus(t *testing.T) {
	refused := errors.New("team-a/storage.yaml:12: StorageAccount team-a/st1: spec.owner: resource group \"rg-missing\" not found\nteam-a/storage.yaml:40: second error")
	held := makePlan(0, 60)
	held.Held = &record.Hold{Reason: "max-deletions", Message: "60 deletions"}
	partial := makePlan(2, 0)
	partial.Units = []record.Unit{{Kind: "Kustomization", Namespace: "flux-system", Name: "team-a", Ready: record.Condition{Status: record.StatusTrue}},
		{Kind: "Kustomization", Namespace: "flux-system", Name: "team-b", Ready: record.Condition{Status: record.StatusFalse, Reason: "BuildFailed"}}}
	cases := []struct {
		name      string
		p         *planner.Plan
		refused   error
		state     string
		desc      string
		wantForge map[string]string // kind → the state on the wire
	}{
		{"plan", makePlan(3, 1), nil, forge.StateSuccess, "3 to create, 1 to delete",
			map[string]string{"github": "success", "gitea": "success", "gitlab": "success", "azuredevops": "succeeded"}},
		{"held", held, nil, forge.StateFailure, "held (max-deletions): 60 to delete",
			map[string]string{"github": "failure", "gitea": "failure", "gitlab": "failed", "azuredevops": "failed"}},
		{"partial", partial, nil, forge.StateFailure, "partial (1 of 2 units failed): 2 to create",
			map[string]string{"github": "failure", "gitea": "failure", "gitlab": "failed", "azuredevops": "failed"}},
		{"refused", nil, refused, forge.StateFailure, `refused, 2 errors: team-a/storage.yaml:12: StorageAccount team-a/st1: spec.owner: resource group "rg-missing" not found`,
			map[string]string{"github": "failure", "gitea": "failure", "gitlab": "failed", "azuredevops": "failed"}},
	}
	for _, kind := range kinds {
		for _, tc := range cases {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				s := forge.StatusOf(tc.p, tc.refused)
				if s.State != tc.state || s.Description != tc.desc || s.Context != forge.DefaultContext {
					t.Errorf("StatusOf = %+v, want %s %q", s, tc.state, tc.desc)
				}
				f := newFake(t, kind)
				s.TargetURL = "https://ci.example/run/1"
				if err := f.forge(t).SetStatus(context.Background(), "abc123", s); err != nil {
					t.Fatal(err)
				}
				if len(f.statuses) != 1 || f.statuses[0].SHA != "abc123" {
					t.Fatalf("statuses: %+v", f.statuses)
				}
				got := f.statuses[0].Body
				if got["state"] != tc.wantForge[kind] {
					t.Errorf("state on the wire %v, want %s", got["state"], tc.wantForge[kind])
				}
				if got["description"] != truncateRunes(tc.desc, 140) {
					t.Errorf("description %q", got["description"])
				}
			})
		}
	}
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// TestRefusedComment: a refused revision's comment says nothing is applied
// and lists its errors.
func TestRefusedComment(t *testing.T) {
	err := errors.New("a.yaml:3: ResourceGroup x/rg: cycle\nb.yaml:9: ```weird``` value")
	parts := forge.Comment(&planner.Plan{Revision: rev}, err, 0, "")
	if len(parts) != 1 {
		t.Fatalf("%d parts", len(parts))
	}
	for _, want := range []string{"<!-- gitaso-plan part 1/1 -->", "revision refused", "2 error(s)", "a.yaml:3: ResourceGroup x/rg: cycle", "'''weird'''", "last good revision"} {
		if !strings.Contains(parts[0], want) {
			t.Errorf("refused comment lacks %q:\n%s", want, parts[0])
		}
	}
	if strings.Count(parts[0], "```")%2 != 0 {
		t.Errorf("unbalanced fences:\n%s", parts[0])
	}
}

// TestOpenPullRequests lists open pull requests across pages.
func TestOpenPullRequests(t *testing.T) {
	want := []forge.PullRequest{
		{Number: 3, HeadSHA: "aaa", HeadRef: "feature/a", BaseRef: "main"},
		{Number: 5, HeadSHA: "bbb", HeadRef: "feature/b", BaseRef: "main"},
		{Number: 8, HeadSHA: "ccc", HeadRef: "fix/c", BaseRef: "release"},
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			f := newFake(t, kind)
			f.pulls = want
			got, err := f.forge(t).OpenPullRequests(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for i := range got {
				if got[i].URL == "" || got[i].State == "" {
					t.Errorf("pull request %d: no URL or state: %+v", got[i].Number, got[i])
				}
				got[i].URL, got[i].State = "", ""
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("open pull requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorsKeepTheTokenOut: a forge's error answer never carries the
// token into the error, and Options never log it.
func TestErrorsKeepTheTokenOut(t *testing.T) {
	f := newFake(&quietT{TB: t}, "github") // the fake's complaint is expected here
	o := f.options()
	o.Repo = "acme/missing"
	o.Token = "wrong-token"
	fg, err := forge.New(o)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fg.UpsertComment(context.Background(), 1, []string{"x"})
	var apiErr *forge.APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("err = %v, want a 401 APIError", err)
	}
	if strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("the token is in the error: %v", err)
	}
	if v := o.LogValue().String(); strings.Contains(v, "wrong-token") {
		t.Errorf("the token is in the log value: %s", v)
	}
}

type quietT struct{ testing.TB }

func (q *quietT) Errorf(string, ...any) {}

// TestNewOptions: base URLs are completed per forge, bad repositories refused.
func TestNewOptions(t *testing.T) {
	for _, tc := range []struct {
		o     forge.Options
		wantE string
	}{
		{forge.Options{Kind: "github", Repo: "a/b"}, ""},
		{forge.Options{Kind: "github", Repo: "a"}, "want OWNER/NAME"},
		{forge.Options{Kind: "gitlab", Repo: "group/sub/project"}, ""},
		{forge.Options{Kind: "azuredevops", Repo: "org/project/repo"}, ""},
		{forge.Options{Kind: "azuredevops", Repo: "project/repo"}, "want PROJECT/REPOSITORY"},
		{forge.Options{Kind: "azuredevops", BaseURL: "https://tfs.example/tfs/DefaultCollection", Repo: "project/repo"}, ""},
		{forge.Options{Kind: "gitea", Repo: "a/b"}, "no server URL"},
		{forge.Options{Kind: "bitbucket", Repo: "a/b"}, "unknown forge kind"},
		{forge.Options{Kind: "github", Repo: "a/b", Marker: "x -->"}, "marker"},
	} {
		_, err := forge.New(tc.o)
		if (err == nil) != (tc.wantE == "") || (err != nil && !strings.Contains(err.Error(), tc.wantE)) {
			t.Errorf("New(%+v) = %v, want %q", tc.o, err, tc.wantE)
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestSummaryLine: the status line names only the actions that occur.
func TestSummaryLine(t *testing.T) {
	withDeferred := makePlan(1, 0)
	withDeferred.Deferred = []*planner.Deferred{{}}
	for _, tc := range []struct {
		p    *planner.Plan
		want string
	}{
		{makePlan(3, 1), "3 to create, 1 to delete"},
		{makePlan(0, 0), "no changes"},
		{withDeferred, "1 to create, 1 known after apply"},
		{nil, "no plan"},
	} {
		if got := planner.SummaryLine(tc.p); got != tc.want {
			t.Errorf("SummaryLine = %q, want %q", got, tc.want)
		}
	}
}
