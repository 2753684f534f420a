package autoplan_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/autoplan"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// fakeForge keeps what the autoplanner posts; the forge clients themselves
// are tested against each forge's REST description in package forge.
type fakeForge struct {
	mu       sync.Mutex
	prs      []forge.PullRequest
	comments map[int][]string
	edits    map[int]int
	statuses map[string][]forge.Status
	outdated map[int]string
}

func newFake() *fakeForge {
	return &fakeForge{comments: map[int][]string{}, edits: map[int]int{}, statuses: map[string][]forge.Status{}, outdated: map[int]string{}}
}

func (f *fakeForge) Name() string { return "fake" }
func (f *fakeForge) UpsertComment(_ context.Context, pr int, parts []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.comments[pr] = parts
	f.edits[pr]++
	return []string{fmt.Sprintf("https://forge.example/pr/%d#c", pr)}, nil
}
func (f *fakeForge) SetStatus(_ context.Context, sha string, s forge.Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[sha] = append(f.statuses[sha], s)
	return nil
}
func (f *fakeForge) OpenPullRequests(context.Context) ([]forge.PullRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]forge.PullRequest(nil), f.prs...), nil
}
func (f *fakeForge) MarkOutdated(_ context.Context, pr int, reason string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.outdated[pr] = reason
	return nil
}
func (f *fakeForge) last(sha string) forge.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	l := f.statuses[sha]
	if len(l) == 0 {
		return forge.Status{}
	}
	return l[len(l)-1]
}

type repo struct {
	t   *testing.T
	dir string
}

func (r repo) git(args ...string) string {
	r.t.Helper()
	out, err := exec.Command("git", append([]string{"-C", r.dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// pr commits files on a branch from main and publishes it as the pull
// request's head ref, as a forge does; it returns the head SHA.
func (r repo) pr(n int, files map[string]string) string {
	r.t.Helper()
	r.git("checkout", "-q", "-B", fmt.Sprintf("pr%d", n), "main")
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), 0o644); err != nil {
			r.t.Fatal(err)
		}
	}
	r.git("add", "-A")
	r.git("commit", "-qm", fmt.Sprintf("pr %d", n))
	sha := r.git("rev-parse", "HEAD")
	r.git("update-ref", fmt.Sprintf("refs/pull/%d/head", n), sha)
	r.git("checkout", "-q", "main")
	return sha
}

func rg(name, tag string) string {
	return "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: " + name +
		", namespace: ops}\nspec:\n  location: westeurope\n  tags: {v: \"" + tag + "\"}\n"
}

// TestAutoplan: every open pull request is planned against the applied
// state and live Azure, its comment and status posted and kept current as
// its head moves; nothing is written to Azure or to the state; the comment
// of a closed pull request is marked outdated.
func TestAutoplan(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	env := emutest.New(t)
	r := repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(r.dir, "rg.yaml"), []byte(rg("base-rg", "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "-A")
	r.git("commit", "-qm", "base")

	// The daemon applied main.
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	mainSrc, err := source.NewGit(source.GitOptions{URL: "file://" + r.dir, Branch: "main"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reconcile.New(mainSrc, db, env.Clients, cfg, nil).Once(t.Context(), reconcile.Options{Trigger: "cli", Refresh: true}); err != nil {
		t.Fatal(err)
	}
	runsBefore, _ := db.Runs(100)

	readOnly, err := azure.ReadOnly(env.Cloud, azure.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	f := newFake()
	a := autoplan.New(autoplan.Config{
		Forge: f,
		Source: func(pr forge.PullRequest) (source.Source, error) {
			return source.NewGit(source.GitOptions{URL: "file://" + r.dir, Ref: fmt.Sprintf("refs/pull/%d/head", pr.Number)})
		},
		Plan: func(ctx context.Context, src source.Source) (*reconcile.Report, error) {
			return reconcile.New(src, db, readOnly, cfg, nil).PlanOnly(ctx, true)
		},
		Comment: func(p *planner.Plan, refused error) []string {
			if refused != nil {
				return []string{"refused: " + refused.Error()}
			}
			var b strings.Builder
			if err := planner.RenderMarkdown(&b, p); err != nil {
				t.Error(err)
			}
			return []string{b.String()}
		},
		Applied: func() string { rev, _ := db.LastGoodRevision(); return rev },
	})

	env.Emu.ResetStats()
	head1 := r.pr(1, map[string]string{"new.yaml": rg("pr1-rg", "a")})
	head2 := r.pr(2, map[string]string{"rg.yaml": "kind: ResourceGroup\napiVersion: resources.azure.com/v1api20200601\nmetadata: {name: base-rg, namespace: ops}\nspec: {location: westeurope, tagz: {}}\n"})
	f.prs = []forge.PullRequest{{Number: 1, HeadSHA: head1}, {Number: 2, HeadSHA: head2}}
	res, err := a.Pass(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Planned) != "[1 2]" {
		t.Errorf("planned %v", res.Planned)
	}
	if s := f.last(head1); s.State != forge.StateSuccess || s.Description != "1 to create" {
		t.Errorf("PR 1 status %+v", s)
	}
	if c := strings.Join(f.comments[1], ""); !strings.Contains(c, "ops/ResourceGroup/pr1-rg") {
		t.Errorf("PR 1 comment:\n%s", c)
	}
	if s := f.last(head2); s.State != forge.StateFailure || !strings.Contains(s.Description, "refused") {
		t.Errorf("PR 2 (a bad field) status %+v", s)
	}
	if c := strings.Join(f.comments[2], ""); !strings.Contains(c, "tagz") {
		t.Errorf("PR 2 comment names no error:\n%s", c)
	}

	// Nothing planned again while nothing moved; a new head is.
	if res, _ := a.Pass(t.Context()); len(res.Planned) != 0 {
		t.Errorf("planned again without a change: %v", res.Planned)
	}
	head1b := r.pr(1, map[string]string{"new.yaml": rg("pr1-rg", "a"), "more.yaml": rg("pr1-more-rg", "b")})
	f.prs[0].HeadSHA = head1b
	if res, _ := a.Pass(t.Context()); fmt.Sprint(res.Planned) != "[1]" {
		t.Errorf("a moved head: planned %v", res.Planned)
	}
	if s := f.last(head1b); s.Description != "2 to create" || f.edits[1] != 2 {
		t.Errorf("PR 1 after its push: status %+v, %d posts (one sticky comment, edited)", s, f.edits[1])
	}

	// Closed: its comment is marked outdated.
	f.prs = f.prs[:1]
	if res, _ := a.Pass(t.Context()); fmt.Sprint(res.Outdated) != "[2]" || f.outdated[2] == "" {
		t.Errorf("closed PR 2: %+v %q", res, f.outdated[2])
	}

	// Read Azure, never wrote; the applied state is untouched.
	for _, l := range env.Emu.RequestLog() {
		if l.Method != "GET" && !(l.Method == "POST" && strings.Contains(strings.ToLower(l.Path), "resourcegraph")) &&
			strings.HasPrefix(strings.ToLower(l.Path), "/subscriptions/") {
			t.Errorf("autoplan sent %s %s", l.Method, l.Path)
		}
	}
	if runs, _ := db.Runs(100); len(runs) != len(runsBefore) {
		t.Errorf("autoplan recorded runs: %d, before %d", len(runs), len(runsBefore))
	}
	// And the read-only client refuses a write outright.
	cli, err := readOnly.For(env.Cred)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "/subscriptions/"+env.Sub+"/resourceGroups/x", "2020-06-01", []byte(`{"location":"westeurope"}`)); !errors.Is(err, azure.ErrReadOnly) {
		t.Errorf("a PUT through the read-only client: %v", err)
	}
}
