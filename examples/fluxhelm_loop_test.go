package examples_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// fluxHelmResources are the ASO objects team-infra renders for team-a/claims-infra (namespace team-a), with the
// ARM ID suffix each gets below the subscription.
var fluxHelmResources = []struct{ kind, name, armID, apiVersion string }{
	{"ResourceGroup", "snd-team-a-claims-rg", "/resourceGroups/snd-team-a-claims-rg", "2020-06-01"},
	{"UserAssignedIdentity", "claims-identity", "/resourceGroups/snd-team-a-claims-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/claims-identity", "2023-01-31"},
	{"FederatedIdentityCredential", "claims-identity-fic", "/resourceGroups/snd-team-a-claims-rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/claims-identity/federatedIdentityCredentials/claims-identity-fic", "2023-01-31"},
	{"StorageAccount", "sndteamaclaims01", "/resourceGroups/snd-team-a-claims-rg/providers/Microsoft.Storage/storageAccounts/sndteamaclaims01", "2023-01-01"},
	{"StorageAccountsBlobService", "sndteamaclaims01-blob", "/resourceGroups/snd-team-a-claims-rg/providers/Microsoft.Storage/storageAccounts/sndteamaclaims01/blobServices/default", "2023-01-01"},
	{"StorageAccountsBlobServicesContainer", "sndteamaclaims01-uploads", "/resourceGroups/snd-team-a-claims-rg/providers/Microsoft.Storage/storageAccounts/sndteamaclaims01/blobServices/default/containers/uploads", "2023-01-01"},
	{"StorageAccountsBlobServicesContainer", "sndteamaclaims01-reports", "/resourceGroups/snd-team-a-claims-rg/providers/Microsoft.Storage/storageAccounts/sndteamaclaims01/blobServices/default/containers/reports", "2023-01-01"},
	{"RoleAssignment", "claims-identity-sndteamaclaims01", "", ""}, // a UUIDv5 name: checked through the state
}

// fluxHelmRepo returns the example's files as a Git repository holds them (charts/ included), platform-vars
// carrying the emulated registry's login server.
func fluxHelmRepo(t *testing.T, loginServer string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(fluxHelmDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fluxHelmDir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const vars = "clusters/snd/platform-vars.yaml"
	old := `ACR_LOGIN_SERVER: "sndplatformcr01.azurecr.io"`
	if !strings.Contains(files[vars], old) {
		t.Fatalf("%s has no %s", vars, old)
	}
	files[vars] = strings.Replace(files[vars], old, fmt.Sprintf("ACR_LOGIN_SERVER: %q", loginServer), 1)
	return files
}

// lockedFetcher is an archiveFetcher safe for concurrent renders whose charts change while gitaso runs.
type lockedFetcher struct {
	mu sync.Mutex
	f  archiveFetcher
}

func (l *lockedFetcher) Fetch(ctx context.Context, req render.ChartRequest) (*render.FetchedChart, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Fetch(ctx, req)
}

func (l *lockedFetcher) FetchURL(ctx context.Context, u, n, v string, s map[string]string) (*render.FetchedChart, error) {
	return l.f.FetchURL(ctx, u, n, v, s)
}

func (l *lockedFetcher) add(nameVersion string, tgz []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.f.charts[nameVersion] = tgz
}

// chart110 is team-infra 1.1.0: a new default tag on every tagged resource (values.yaml as helm package
// writes it: from the chart's raw file).
func chart110(t *testing.T) []byte {
	t.Helper()
	return packageChart(t, "team-infra", func(c *chart.Chart) {
		c.Metadata.Version = "1.1.0"
		for _, f := range c.Raw {
			if f.Name == "values.yaml" {
				text := string(f.Data)
				if !strings.Contains(text, "\ntags: {}\n") {
					t.Fatalf("team-infra's values.yaml has no 'tags: {}' line")
				}
				f.Data = []byte(strings.Replace(text, "\ntags: {}\n", "\ntags:\n  data-classification: internal\n", 1))
			}
		}
	})
}

// TestFluxHelmReconcileLoop runs the flux-helm example through gitaso's reconcile loop (source.NewGit over Git
// HTTPS, the Flux renderer, reconcile.Loop, the emulator), the chart coming from a fetcher in memory in place of
// the registry: the first run creates every resource, Ready; then team-infra 1.1.0 appears (matching the
// HelmRelease's 1.x) and the next poll, with no commit, is a new revision that applies the new tag.
func TestFluxHelmReconcileLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: emulator, Git server")
	}
	em := emutest.New(t, emutest.Roles("Contributor", "User Access Administrator"))
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("flux-platform")
	commit := repo.Commit(fluxHelmRepo(t, "sndplatformcr01.azurecr.io"), nil, "flux platform")
	f := &lockedFetcher{f: archiveFetcher{charts: map[string][]byte{"team-infra@1.0.0": packageChart(t, "team-infra", nil)}}}
	rnd, err := render.New(render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/snd", Strict: true, Substitute: true,
		RepositoryURL: repo.URL(), Charts: f})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := source.NewGit(source.GitOptions{URL: repo.URL(), Branch: repo.Branch(), CacheDir: filepath.Join(dir, "git"),
		CABundle: srv.CABundle(), Renderer: rnd})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(dir, "gitaso.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = em.Cred
	cfg.Interval = 200 * time.Millisecond
	r := reconcile.New(src, db, em.Clients, cfg, nil)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- r.Loop(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	runs := waitDBRuns(t, db, 1)
	t.Logf("first run (plan and apply of %d resources) %s after start: %+v", len(fluxHelmResources), time.Since(start).Round(time.Millisecond), runs[0])
	if runs[0].Outcome != record.OutcomeSucceeded || !strings.HasPrefix(runs[0].Revision, commit+"+") {
		t.Fatalf("first run: %+v (want succeeded, revision %s+<charts>)", runs[0], commit)
	}
	checkDBReady(t, db)

	f.add("team-infra@1.1.0", chart110(t))
	pushed := time.Now()
	runs = waitDBRuns(t, db, 2)
	latest := runs[0]
	t.Logf("team-infra 1.1.0 applied %s after it appeared: %+v", time.Since(pushed).Round(time.Millisecond), latest)
	if latest.Outcome != record.OutcomeSucceeded || !strings.HasPrefix(latest.Revision, commit+"+") || latest.Revision == runs[1].Revision ||
		latest.Counts["update"] != 3 {
		t.Errorf("run after the new chart: %+v (want succeeded, a new revision of commit %s, the 3 tagged resources updated)", latest, commit)
	}
	checkDBReady(t, db)
	for _, r := range fluxHelmResources[:4] {
		if r.kind == "FederatedIdentityCredential" {
			continue
		}
		b, err := em.Client.Get(t.Context(), "/subscriptions/"+em.Sub+r.armID, r.apiVersion)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Tags map[string]string `json:"tags"`
		}
		_ = json.Unmarshal(b, &got)
		if got.Tags["data-classification"] != "internal" {
			t.Errorf("%s/%s tags after 1.1.0: %v", r.kind, r.name, got.Tags)
		}
	}
}

// waitDBRuns waits for n finished runs in the state file and returns them, newest first.
func waitDBRuns(t *testing.T, db *state.DB, n int) []record.Run {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		runs, err := db.Runs(100)
		if err != nil {
			t.Fatal(err)
		}
		var finished []record.Run
		for _, r := range runs {
			if !r.FinishedAt.IsZero() {
				finished = append(finished, r)
			}
		}
		if len(finished) >= n {
			return finished
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no %d finished runs in 60 s", n)
	return nil
}

// checkDBReady checks that the state holds every resource of the example, all Ready.
func checkDBReady(t *testing.T, db *state.DB) {
	t.Helper()
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != len(fluxHelmResources) {
		t.Errorf("state holds %d resources, want %d", len(rs), len(fluxHelmResources))
	}
	for _, r := range rs {
		if r.Ready.Status != "True" {
			t.Errorf("%s/%s/%s is not Ready: %+v", r.Namespace, r.Kind, r.Name, r.Ready)
		}
	}
}
