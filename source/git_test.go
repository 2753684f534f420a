package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/manifest"
)

const testPassword = "s3cret-Pa55"

// newTestGit returns a Git source for repo, with a log buffer.
func newTestGit(t *testing.T, srv *gittest.Server, repo *gittest.Repo, cacheDir, path string) (*Git, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	g, err := NewGit(GitOptions{
		URL: repo.URL(), Branch: repo.Branch(), Path: path, CacheDir: cacheDir,
		Username: "alice", Password: testPassword, CABundle: srv.CABundle(),
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatal(err)
	}
	return g, &logs
}

// uploadPacks returns the bodies of the requests that transferred objects.
func uploadPacks(srv *gittest.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		if r.IsUploadPack() {
			out = append(out, string(r.RequestBody))
		}
	}
	return out
}

func TestGitFetchFollowsCommits(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", testPassword))
	repo := srv.CreateRepo("platform")
	sha1 := repo.Commit(map[string]string{
		"infra/rg.yaml":            rgYAML,
		"infra/team/secret.yaml":   secretYAML,
		"infra/app.yaml":           deployYAML,
		"infra/.github/ci.yaml":    "not: [valid",
		"infra/kustomization.yaml": kustomizationYAML,
		"elsewhere/broken.yaml":    "a: b: c\n",
	}, nil, "first")

	ctx := context.Background()
	g, logs := newTestGit(t, srv, repo, t.TempDir(), "infra")
	snap, err := g.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != sha1 {
		t.Errorf("revision %s, want %s", snap.Revision, sha1)
	}
	if diff := cmp.Diff([]string{"infra/rg.yaml:1 team-a/ResourceGroup/rg", "infra/team/secret.yaml:1 team-a/Secret/db"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"infra/app.yaml:1 default/Deployment/web"}, ids(snap.Ignored)); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	packs := uploadPacks(srv)
	if len(packs) != 1 || !strings.Contains(packs[0], "deepen 1") {
		t.Errorf("first fetch should be one shallow (deepen 1) upload-pack, got %q", packs)
	}

	// A second commit changes one field and deletes a file.
	srv.ResetRequests()
	sha2 := repo.Commit(map[string]string{"infra/rg.yaml": strings.Replace(rgYAML, "westeurope", "northeurope", 1)},
		[]string{"infra/app.yaml"}, "second")
	snap2, err := g.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap2.Revision != sha2 {
		t.Errorf("revision %s, want %s", snap2.Revision, sha2)
	}
	if loc := snap2.Objects[0].Spec()["location"]; loc != "northeurope" {
		t.Errorf("location after the second commit: %v", loc)
	}
	if len(snap2.Ignored) != 0 {
		t.Errorf("deleted file still read: %v", ids(snap2.Ignored))
	}
	packs = uploadPacks(srv)
	if len(packs) != 1 || strings.Contains(packs[0], "deepen") || !strings.Contains(packs[0], sha1) {
		t.Errorf("second fetch should be one incremental upload-pack (no deepen, naming %s), got %q", sha1, packs)
	}

	// Nothing new: the same snapshot, and no objects transferred.
	srv.ResetRequests()
	snap3, err := g.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap3 != snap2 {
		t.Errorf("unchanged branch should return the cached snapshot")
	}
	if packs := uploadPacks(srv); len(packs) != 0 {
		t.Errorf("no-change fetch transferred objects: %q", packs)
	}
	head, err := g.Head(ctx)
	if err != nil || head != sha2 {
		t.Errorf("Head = %s, %v; want %s", head, err, sha2)
	}
	if strings.Contains(logs.String(), testPassword) {
		t.Errorf("password in logs:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "revision="+sha2) {
		t.Errorf("logs do not name the revision:\n%s", logs.String())
	}
}

func TestGitRestartUsesCache(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", testPassword))
	repo := srv.CreateRepo("platform")
	sha1 := repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "first")
	cache := t.TempDir()
	ctx := context.Background()

	g1, _ := newTestGit(t, srv, repo, cache, "")
	if _, err := g1.Fetch(ctx); err != nil {
		t.Fatal(err)
	}

	// A new process (new Git value) on the same cache, nothing new upstream.
	srv.ResetRequests()
	g2, _ := newTestGit(t, srv, repo, cache, "")
	snap, err := g2.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != sha1 || len(snap.Objects) != 1 {
		t.Errorf("after restart: revision %s objects %v", snap.Revision, ids(snap.Objects))
	}
	if packs := uploadPacks(srv); len(packs) != 0 {
		t.Errorf("restart re-cloned: %q", packs)
	}
	if len(srv.Requests()) == 0 {
		t.Errorf("restart did not ask the server for refs")
	}

	// A new commit after the restart is fetched incrementally.
	srv.ResetRequests()
	sha2 := repo.Commit(map[string]string{"cm.yaml": cmYAML}, nil, "second")
	g3, _ := newTestGit(t, srv, repo, cache, "")
	snap, err = g3.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision != sha2 || len(snap.Objects) != 2 {
		t.Errorf("after restart and commit: revision %s objects %v", snap.Revision, ids(snap.Objects))
	}
	packs := uploadPacks(srv)
	if len(packs) != 1 || strings.Contains(packs[0], "deepen") || !strings.Contains(packs[0], sha1) {
		t.Errorf("want one incremental upload-pack naming %s, got %q", sha1, packs)
	}
}

func TestGitAuthFailure(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("alice", testPassword))
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "first")
	const wrong = "wrong-Pa55word"
	u, _ := url.Parse(repo.URL())
	u.User = url.UserPassword("alice", wrong)
	for name, opts := range map[string]GitOptions{
		"options":   {URL: repo.URL(), Username: "alice", Password: wrong},
		"url":       {URL: u.String()},
		"anonymous": {URL: repo.URL()},
	} {
		t.Run(name, func(t *testing.T) {
			var logs bytes.Buffer
			opts.CABundle = srv.CABundle()
			opts.CacheDir = t.TempDir()
			opts.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			g, err := NewGit(opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = g.Fetch(context.Background())
			if !errors.Is(err, ErrAuth) {
				t.Fatalf("want ErrAuth, got %v", err)
			}
			msg := err.Error()
			if strings.Contains(msg, wrong) || strings.Contains(logs.String(), wrong) {
				t.Errorf("password leaked: %q\n%s", msg, logs.String())
			}
			if !strings.Contains(msg, repo.URL()) || !strings.Contains(msg, "branch main") {
				t.Errorf("error does not name URL and branch: %q", msg)
			}
			if _, err := g.Head(context.Background()); !errors.Is(err, ErrAuth) || strings.Contains(err.Error(), wrong) {
				t.Errorf("Head: %v", err)
			}
		})
	}
}

func TestGitMalformedCommitIsRefusedWhole(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "good")
	bad := repo.Commit(map[string]string{"cm.yaml": cmYAML, "broken.yaml": "apiVersion: v1\nkind: Secret\n"}, nil, "bad")
	g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle()})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.Fetch(context.Background())
	var rerr *RevisionError
	if !errors.As(err, &rerr) || snap != nil {
		t.Fatalf("want *RevisionError and no snapshot, got %v, %v", snap, err)
	}
	if rerr.Revision != bad {
		t.Errorf("refused revision %s, want %s", rerr.Revision, bad)
	}
	if got := diag.AsList(err).Error(); got != "broken.yaml:1: metadata.name: required field is missing" {
		t.Errorf("errors: %q", got)
	}
	// Fetching again without a new commit reports the same refusal.
	if _, err2 := g.Fetch(context.Background()); err2 != err {
		t.Errorf("second fetch: %v", err2)
	}
	fixed := repo.Commit(map[string]string{"broken.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"}, nil, "fix")
	snap, err = g.Fetch(context.Background())
	if err != nil || snap.Revision != fixed || len(snap.Objects) != 3 {
		t.Fatalf("after fix: %v, %v", snap, err)
	}
}

func TestGitErrors(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"infra/rg.yaml": rgYAML}, nil, "first")
	ctx := context.Background()
	tests := []struct {
		name string
		opts GitOptions
		want error
	}{
		{"missing branch", GitOptions{URL: repo.URL(), Branch: "nope"}, ErrBranchNotFound},
		{"missing path", GitOptions{URL: repo.URL(), Path: "nope"}, ErrPathNotFound},
		{"missing repository", GitOptions{URL: srv.URL() + "/nope.git"}, ErrRepoNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.CABundle = srv.CABundle()
			g, err := NewGit(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := g.Fetch(ctx); !errors.Is(err, tt.want) {
				t.Errorf("want %v, got %v", tt.want, err)
			}
		})
	}
	if _, err := NewGit(GitOptions{URL: repo.URL(), Path: "../x"}); err == nil {
		t.Errorf("path with .. accepted")
	}
	if _, err := NewGit(GitOptions{}); err == nil {
		t.Errorf("empty URL accepted")
	}
	g, _ := NewGit(GitOptions{URL: repo.URL()})
	if _, err := g.Fetch(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("untrusted certificate: %v", err)
	}
}

// TestGitProtocols fetches the same repository over plain HTTP, git:// and a
// local path.
func TestGitProtocols(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithPlainHTTP())
	repo := srv.CreateRepo("platform")
	sha := repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "first")
	daemon := srv.StartDaemon()
	for name, u := range map[string]string{
		"http": repo.URL(),
		"git":  repo.DaemonURL(daemon),
		"path": repo.Dir(),
		"file": "file://" + repo.Dir(),
	} {
		t.Run(name, func(t *testing.T) {
			g, err := NewGit(GitOptions{URL: u, CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := g.Fetch(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if snap.Revision != sha || len(snap.Objects) != 1 {
				t.Errorf("revision %s objects %v", snap.Revision, ids(snap.Objects))
			}
		})
	}
}

func TestGitOptionsLogValue(t *testing.T) {
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("x", "git", GitOptions{
		URL: "https://bob:tok3n@example.com/r.git", Username: "bob", Password: "tok3n"})
	if strings.Contains(logs.String(), "tok3n") || !strings.Contains(logs.String(), "example.com") {
		t.Errorf("log: %s", logs.String())
	}
}

func TestGitCacheCompactionAndRecovery(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "first")
	cache := t.TempDir()
	ctx := context.Background()
	var logs bytes.Buffer
	g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle(), CacheDir: cache,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	old := maxPacks
	maxPacks = 2
	defer func() { maxPacks = old }()

	packCount := func() int {
		t.Helper()
		packs, err := filepath.Glob(filepath.Join(g.cacheDir(), "objects", "pack", "*.pack"))
		if err != nil {
			t.Fatal(err)
		}
		return len(packs)
	}
	for i := range 4 {
		srv.ResetRequests()
		sha := repo.Commit(map[string]string{fmt.Sprintf("cm%d.yaml", i): strings.Replace(cmYAML, "name: settings", fmt.Sprintf("name: cm%d", i), 1)}, nil, "more")
		snap, err := g.Fetch(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Revision != sha || len(snap.Objects) != i+2 {
			t.Fatalf("fetch %d: revision %s objects %v", i, snap.Revision, ids(snap.Objects))
		}
		if n := packCount(); n > maxPacks+1 {
			t.Errorf("fetch %d: %d packs, want at most %d", i, n, maxPacks+1)
		}
	}

	// Lose every object of the cache but keep the refs: the next fetch must
	// notice and clone again instead of failing forever.
	packs, _ := filepath.Glob(filepath.Join(g.cacheDir(), "objects", "pack", "*"))
	for _, p := range packs {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	g.Close()
	sha := repo.Commit(map[string]string{"rg.yaml": strings.Replace(rgYAML, "westeurope", "northeurope", 1)}, nil, "after loss")
	srv.ResetRequests()
	snap, err := g.Fetch(ctx)
	if err != nil {
		t.Fatalf("fetch after losing the cache's objects: %v", err)
	}
	if snap.Revision != sha || len(snap.Objects) != 5 {
		t.Errorf("after recovery: revision %s objects %v", snap.Revision, ids(snap.Objects))
	}
	if p := uploadPacks(srv); len(p) != 1 || !strings.Contains(p[0], "deepen 1") {
		t.Errorf("recovery should be one shallow clone, got %q", p)
	}
	if !strings.Contains(logs.String(), "git cache is damaged, cloning again") || !strings.Contains(logs.String(), "compacting git cache") {
		t.Errorf("logs:\n%s", logs.String())
	}
}

func TestGitReparsesOnlyChangedFiles(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("cm/%02d.yaml", i)] = strings.Replace(cmYAML, "name: settings", fmt.Sprintf("name: cm%02d", i), 1)
	}
	files["rg.yaml"] = rgYAML
	repo.Commit(files, nil, "first")
	ctx := context.Background()
	g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	snap1, err := g.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.reads != 21 {
		t.Errorf("first snapshot read %d files, want 21", g.reads)
	}
	// Callers must not modify snapshots, but if one does, the next snapshot
	// must not see it.
	snap1.Objects[0].Content["data"].(map[string]any)["region"] = "mutated"

	repo.Commit(map[string]string{"rg.yaml": strings.Replace(rgYAML, "westeurope", "northeurope", 1)}, []string{"cm/19.yaml"}, "second")
	snap2, err := g.Fetch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if g.reads != 22 {
		t.Errorf("second snapshot read %d files in all, want 22 (only rg.yaml again)", g.reads)
	}
	if len(snap2.Objects) != 20 {
		t.Fatalf("objects %v", ids(snap2.Objects))
	}
	if got := snap2.Objects[0].Content["data"].(map[string]any)["region"]; got != "westeurope" {
		t.Errorf("a cached object shares state with the previous snapshot: region %v", got)
	}
	if loc := snap2.Objects[19].Spec()["location"]; snap2.Objects[19].Kind() != "ResourceGroup" || loc != "northeurope" {
		t.Errorf("changed file not re-read: %v %v", snap2.Objects[19], loc)
	}
}

func TestGitConcurrentFetchAndCancel(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	sha := repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "first")
	g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle(), CacheDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()

	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Fetch(cancelled); !errors.Is(err, context.Canceled) {
		t.Errorf("fetch with a cancelled context: %v", err)
	}

	errs := make(chan error, 4)
	for range 4 {
		go func() {
			snap, err := g.Fetch(context.Background())
			if err == nil && snap.Revision != sha {
				err = fmt.Errorf("revision %s, want %s", snap.Revision, sha)
			}
			if err == nil {
				_, err = g.Head(context.Background())
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// A Git snapshot does not hold its files: an error's field line is found by
// reading the blob back from the cache, with a renderer or without.
func TestGitSnapshotReadsTextsBack(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"infra/rg.yaml": rgYAML}, nil, "first")
	for _, r := range []Renderer{nil, &recorder{}} {
		g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle(), CacheDir: t.TempDir(), Path: "infra",
			Renderer: r, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := g.Fetch(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, held := snap.Texts.(manifest.TextMap); held || snap.Texts == nil {
			t.Fatalf("renderer %v: texts %T, want read back from the cache", r != nil, snap.Texts)
		}
		if got := string(snap.Texts.Text("infra/rg.yaml")); got != rgYAML {
			t.Errorf("renderer %v: text %q, want the file", r != nil, got)
		}
		if got := snap.Texts.Text("infra/other.yaml"); got != nil {
			t.Errorf("renderer %v: a file not in the snapshot: %q", r != nil, got)
		}
		e := &diag.Error{File: "infra/rg.yaml", Line: snap.Objects[0].Line, Field: "spec.location"}
		LocateFields(diag.List{e}, snap.Texts)
		if want := strings.Count(rgYAML[:strings.Index(rgYAML, "location:")], "\n") + 1; e.Line != want {
			t.Errorf("renderer %v: field located at line %d, want %d", r != nil, e.Line, want)
		}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		if got := snap.Texts.Text("infra/rg.yaml"); got != nil {
			t.Errorf("renderer %v: text of a closed cache: %q", r != nil, got)
		}
	}
}
