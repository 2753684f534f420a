package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/charts"
)

// failedUnit returns the unit id ("Kind/namespace/name") of a snapshot,
// which must have failed (with reason unless ""), and its errors as one
// error (a diag.List; nil when it has none). The revision must not have
// been refused, and none of the unit's objects may be in the snapshot.
func failedUnit(t *testing.T, snap *manifest.Snapshot, err error, id, reason string) (manifest.Unit, error) {
	t.Helper()
	if err != nil {
		t.Fatalf("revision refused, want unit %s failed alone: %v", id, err)
	}
	for _, u := range snap.Units {
		if u.ID() != id {
			continue
		}
		if !u.Failed() {
			t.Fatalf("unit %s rendered (%d objects), want it failed", id, u.Objects)
		}
		if reason != "" && u.Reason != reason {
			t.Errorf("unit %s: reason %s, want %s (%s)", id, u.Reason, reason, u.Message)
		}
		if u.Message == "" {
			t.Errorf("unit %s: no message", id)
		}
		for _, o := range snap.Objects {
			if manifest.UnitOf(o) == id {
				t.Errorf("unit %s failed, yet its object %s is in the snapshot", id, o.ID())
			}
		}
		if len(u.Errors) == 0 {
			return u, nil
		}
		if first := strings.Join(strings.Fields(u.Errors.Sorted()[0].Error()), " "); !strings.HasPrefix(u.Message, first) {
			t.Errorf("unit %s: message %q, want its first error %q", id, u.Message, first)
		}
		return u, u.Errors
	}
	t.Fatalf("no unit %s in %v", id, unitIDs(snap))
	return manifest.Unit{}, nil
}

// unitIDs lists a snapshot's units with their reasons.
func unitIDs(snap *manifest.Snapshot) []string {
	var out []string
	for _, u := range snap.Units {
		s := u.ID()
		if u.Reason != "" {
			s += " (" + u.Reason + ")"
		}
		out = append(out, s)
	}
	return out
}

// teamsRepo is a platform repository of three teams, each a Flux
// Kustomization (teams/<t>, targetNamespace team-<t>, postBuild TEAM) whose
// output holds a ResourceGroup and a HelmRelease "app" of the chart infra
// from the Helm repository at url (HelmRepository flux-system/charts;
// flux-system/flaky is url/flaky). The chart's ResourceGroup is named after
// the release and requires values.location.
func teamsRepo(url string) map[string]string {
	files := map[string]string{
		"clusters/c/flux-system.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: https://git.example/platform.git
---
` + fluxKustomizationDoc("flux-system", "./clusters/c", ""),
		"clusters/c/charts.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: charts
  namespace: flux-system
spec:
  url: ` + url + `
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata:
  name: flaky
  namespace: flux-system
spec:
  url: ` + url + `/flaky
`,
	}
	var teams []string
	for _, t := range []string{"a", "b", "c"} {
		teams = append(teams, fluxKustomizationDoc("team-"+t, "./teams/"+t, "  targetNamespace: team-"+t+"\n  postBuild:\n    substitute:\n      TEAM: "+t+"\n"))
		files["teams/"+t+"/kustomization.yaml"] = "resources: [rg.yaml, release.yaml]\n"
		files["teams/"+t+"/rg.yaml"] = strings.Replace(rg("team-${TEAM}-rg"), "uksouth", "uksouth\n  tags:\n    team: ${TEAM}", 1)
		files["teams/"+t+"/release.yaml"] = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: app
spec:
  interval: 5m
  chart:
    spec:
      chart: infra
      version: 1.x
      sourceRef:
        kind: HelmRepository
        name: charts
        namespace: flux-system
  values:
    location: westeurope
`
	}
	files["clusters/c/teams.yaml"] = strings.Join(teams, "---\n")
	return files
}

// chartRepoServer serves a Helm repository holding infra 1.0.0 (whose
// ResourceGroup requires values.location) at its root, and answers 503 below
// /flaky.
func chartRepoServer(t *testing.T) (*httptest.Server, ChartFetcher) {
	t.Helper()
	var down atomic.Bool
	down.Store(true)
	return flakyChartRepoServer(t, &down)
}

// flakyChartRepoServer is chartRepoServer whose /flaky repository answers
// 503 only while down is set (otherwise it is the same repository).
func flakyChartRepoServer(t *testing.T, down *atomic.Bool) (*httptest.Server, ChartFetcher) {
	t.Helper()
	archive := chartArchive(t, "infra", "1.0.0", "", map[string]string{"rg.yaml": `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {{ .Release.Name }}
spec:
  location: {{ required "values.location is required" .Values.location }}
`}, nil)
	sum := sha256.Sum256(archive)
	var srv *httptest.Server
	srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := strings.CutPrefix(r.URL.Path, "/flaky"); ok {
			if down.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			r.URL.Path = p
		}
		switch {
		case r.URL.Path == "/index.yaml":
			fmt.Fprintf(w, "apiVersion: v1\nentries:\n  infra:\n    - name: infra\n      version: 1.0.0\n      digest: %s\n      urls: [%s/infra-1.0.0.tgz]\n",
				hex.EncodeToString(sum[:]), srv.URL)
		case r.URL.Path == "/infra-1.0.0.tgz":
			_, _ = w.Write(archive)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	f, err := charts.New(charts.Options{HTTPClient: srv.Client(), CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return srv, ChartsFetcher(f)
}

// lineOf returns the 1-based line of the n-th (from 1) line of text
// containing sub.
func lineOf(t *testing.T, text, sub string, n int) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, sub) {
			if n--; n == 0 {
				return i + 1
			}
		}
	}
	t.Fatalf("no line %q", sub)
	return 0
}

// TestFluxOneBrokenTeam: one team broken in each way issue 25 lists fails
// its unit alone, with its reason and its errors (file and line); the other
// teams' objects are all there and none of the broken unit's. A
// Kustomization that depends on a failed one waits (DependencyNotReady)
// with its objects left out, and its HelmRelease is unknown (not listed).
func TestFluxOneBrokenTeam(t *testing.T) {
	srv, charts := chartRepoServer(t)
	all := []string{
		"team-a/ResourceGroup/app", "team-a/ResourceGroup/team-a-rg",
		"team-b/ResourceGroup/app", "team-b/ResourceGroup/team-b-rg",
		"team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg",
	}
	teamC := func(files map[string]string, old, new string) {
		files["clusters/c/teams.yaml"] = strings.Replace(files["clusters/c/teams.yaml"], old, new, 1)
	}
	for _, tc := range []struct {
		name    string
		break_  func(files map[string]string)
		failed  map[string]string // unit → reason
		absent  []string          // objects left out
		unknown []string          // units not listed
		want    func(files map[string]string) []string
		retry   bool
	}{{
		name: "patch matching nothing after a rename",
		break_: func(files map[string]string) {
			teamC(files, "      TEAM: c\n", "      TEAM: c\n  patches:\n    - patch: |\n        apiVersion: resources.azure.com/v1api20200601\n        kind: ResourceGroup\n        metadata:\n          name: team-c-resources\n        spec:\n          location: westus\n")
		},
		failed:  map[string]string{"Kustomization/flux-system/team-c": manifest.ReasonBuildFailed},
		absent:  []string{"team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg"},
		unknown: []string{"HelmRelease/team-c/app"},
		want: func(files map[string]string) []string {
			// The Kustomization's patch, not the kustomization gitaso wrote it into.
			return []string{fmt.Sprintf(`clusters/c/teams.yaml:%d: flux-system/Kustomization/team-c: spec.patches[0]: kustomize build failed: no resource matches strategic merge patch "ResourceGroup.v1api20200601.resources.azure.com/team-c-resources`,
				lineOf(t, files["clusters/c/teams.yaml"], "    - patch: |", 1))}
		},
	}, {
		name:    "spec.path not created",
		break_:  func(files map[string]string) { teamC(files, "path: ./teams/c", "path: ./teams/c-next") },
		failed:  map[string]string{"Kustomization/flux-system/team-c": manifest.ReasonBuildFailed},
		absent:  []string{"team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg"},
		unknown: []string{"HelmRelease/team-c/app"},
		want: func(files map[string]string) []string {
			return []string{fmt.Sprintf(`clusters/c/teams.yaml:%d: flux-system/Kustomization/team-c: spec.path: "./teams/c-next": no such directory`,
				lineOf(t, files["clusters/c/teams.yaml"], "path: ./teams/c-next", 1))}
		},
	}, {
		name: "chart version not pushed",
		break_: func(files map[string]string) {
			files["teams/c/release.yaml"] = strings.Replace(files["teams/c/release.yaml"], "1.x", "2.x", 1)
		},
		failed: map[string]string{"HelmRelease/team-c/app": manifest.ReasonArtifactFailed},
		absent: []string{"team-c/ResourceGroup/app"},
		want: func(files map[string]string) []string {
			return []string{`teams/c/release.yaml:9: team-c/HelmRelease/app: spec.chart.spec: HelmRepository flux-system/charts at clusters/c/charts.yaml:1: chart "infra" version "2.x": chart not found`}
		},
	}, {
		name:    "unset variable under strict",
		break_:  func(files map[string]string) { files["teams/c/rg.yaml"] += "    owner: ${OWNER}\n" },
		failed:  map[string]string{"Kustomization/flux-system/team-c": manifest.ReasonBuildFailed},
		absent:  []string{"team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg"},
		unknown: []string{"HelmRelease/team-c/app"},
		want: func(map[string]string) []string {
			return []string{"teams/c/rg.yaml:1: team-c/ResourceGroup/team-${TEAM}-rg: ${OWNER} (postBuild of Flux Kustomization flux-system/team-c): variable is not set"}
		},
	}, {
		name: "registry not answering",
		break_: func(files map[string]string) {
			files["teams/c/release.yaml"] = strings.Replace(files["teams/c/release.yaml"], "name: charts", "name: flaky", 1)
		},
		failed: map[string]string{"HelmRelease/team-c/app": manifest.ReasonArtifactFailed},
		absent: []string{"team-c/ResourceGroup/app"},
		retry:  true,
		want: func(map[string]string) []string {
			return []string{"teams/c/release.yaml:9: team-c/HelmRelease/app: spec.chart.spec: HelmRepository flux-system/flaky at clusters/c/charts.yaml:9", "503 Service Unavailable"}
		},
	}, {
		name: "template error",
		break_: func(files map[string]string) {
			files["teams/c/release.yaml"] = strings.Replace(files["teams/c/release.yaml"], "    location: westeurope\n", "    region: westeurope\n", 1)
		},
		failed: map[string]string{"HelmRelease/team-c/app": manifest.ReasonBuildFailed},
		absent: []string{"team-c/ResourceGroup/app"},
		want: func(map[string]string) []string {
			return []string{"team-c/HelmRelease/app: spec.values: HelmRelease team-c/app, chart infra@1.0.0", "values.location is required"}
		},
	}, {
		name: "dependsOn a failed Kustomization",
		break_: func(files map[string]string) {
			teamC(files, "path: ./teams/c", "path: ./teams/c-next")
			files["clusters/c/teams.yaml"] = strings.Replace(files["clusters/c/teams.yaml"], "      TEAM: b\n", "      TEAM: b\n  dependsOn:\n    - name: team-c\n", 1)
		},
		failed:  map[string]string{"Kustomization/flux-system/team-c": manifest.ReasonBuildFailed, "Kustomization/flux-system/team-b": manifest.ReasonDependencyNotReady},
		absent:  []string{"team-b/ResourceGroup/app", "team-b/ResourceGroup/team-b-rg", "team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg"},
		unknown: []string{"HelmRelease/team-b/app", "HelmRelease/team-c/app"},
		want:    func(map[string]string) []string { return []string{"./teams/c-next"} },
	}, {
		name: "dependsOn a failed HelmRelease",
		break_: func(files map[string]string) {
			files["teams/c/release.yaml"] = strings.Replace(files["teams/c/release.yaml"], "    location: westeurope\n", "    region: westeurope\n", 1)
			files["teams/b/release.yaml"] += "  dependsOn:\n    - name: app\n      namespace: team-c\n"
		},
		failed: map[string]string{"HelmRelease/team-c/app": manifest.ReasonBuildFailed, "HelmRelease/team-b/app": manifest.ReasonDependencyNotReady},
		absent: []string{"team-b/ResourceGroup/app", "team-c/ResourceGroup/app"},
		want:   func(map[string]string) []string { return []string{"values.location is required"} },
	}, {
		// Found by the parser, not the render: the same unit fails, its
		// children are unknown and its dependents wait.
		name: "invalid object name, and a Kustomization depending on it",
		break_: func(files map[string]string) {
			files["teams/c/rg.yaml"] = strings.Replace(files["teams/c/rg.yaml"], "team-${TEAM}-rg", "team-${TEAM}-RG", 1)
			files["clusters/c/teams.yaml"] = strings.Replace(files["clusters/c/teams.yaml"], "      TEAM: b\n", "      TEAM: b\n  dependsOn:\n    - name: team-c\n", 1)
		},
		failed:  map[string]string{"Kustomization/flux-system/team-c": manifest.ReasonBuildFailed, "Kustomization/flux-system/team-b": manifest.ReasonDependencyNotReady},
		absent:  []string{"team-b/ResourceGroup/app", "team-b/ResourceGroup/team-b-rg", "team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg"},
		unknown: []string{"HelmRelease/team-b/app", "HelmRelease/team-c/app"},
		want: func(map[string]string) []string {
			return []string{`teams/c/rg.yaml:4: team-c/ResourceGroup/team-c-RG: metadata.name: "team-c-RG" is not a valid name`}
		},
	}, {
		name: "dependsOn a Kustomization that does not exist",
		break_: func(files map[string]string) {
			files["clusters/c/teams.yaml"] = strings.Replace(files["clusters/c/teams.yaml"], "      TEAM: c\n", "      TEAM: c\n  dependsOn:\n    - name: team-z\n", 1)
		},
		failed:  map[string]string{"Kustomization/flux-system/team-c": manifest.ReasonDependencyNotReady},
		absent:  []string{"team-c/ResourceGroup/app", "team-c/ResourceGroup/team-c-rg"},
		unknown: []string{"HelmRelease/team-c/app"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			files := teamsRepo(srv.URL)
			tc.break_(files)
			snap, err := fluxFetch(t, writeRepo(t, files), "clusters/c", Options{Strict: true, Charts: charts})
			if err != nil {
				t.Fatalf("revision refused: %v", err)
			}
			var want []string
			for _, id := range all {
				if !slices.Contains(tc.absent, id) {
					want = append(want, id)
				}
			}
			if diff := cmp.Diff(want, ids(snap.Objects)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			var errs []string
			for id, reason := range tc.failed {
				u, err := failedUnit(t, snap, nil, id, reason)
				if err != nil {
					errs = append(errs, err.Error())
				}
				if u.Retry != (tc.retry && reason == manifest.ReasonArtifactFailed) {
					t.Errorf("%s: retry %v", id, u.Retry)
				}
				if reason == manifest.ReasonDependencyNotReady && (len(u.Errors) != 0 || !strings.Contains(u.Message, "dependency '")) {
					t.Errorf("%s: waits with message %q and errors %v", id, u.Message, u.Errors)
				}
			}
			got := strings.Join(errs, "\n")
			if tc.want != nil {
				for _, w := range tc.want(files) {
					if !strings.Contains(got, w) {
						t.Errorf("errors do not say %q:\n%s", w, got)
					}
				}
			}
			// Every other unit rendered; the unknown ones are not listed.
			for _, u := range snap.Units {
				if _, ok := tc.failed[u.ID()]; !ok && u.Failed() {
					t.Errorf("unit %s failed too: %s: %s", u.ID(), u.Reason, u.Message)
				}
				if slices.Contains(tc.unknown, u.ID()) {
					t.Errorf("unit %s listed, want it unknown (its parent did not render)", u.ID())
				}
			}
			if n := len(snap.Units) + len(tc.unknown); n != 7 {
				t.Errorf("%d units listed and %d unknown, want 7 in all: %v", len(snap.Units), len(tc.unknown), unitIDs(snap))
			}
		})
	}
}

// TestFluxUnitRecords: every Kustomization and HelmRelease found is a unit
// with where it is declared, the Kustomization whose output declared it,
// its dependsOn, suspend (reconcile: disabled too), wait, healthChecks,
// timeout, intervals (Flux's defaults: timeout and retryInterval the
// interval; a HelmRelease waits unless disableWait, timeout 5m) and its
// object count; the units are sorted by ID, and every object names its
// unit (manifest.UnitOf).
func TestFluxUnitRecords(t *testing.T) {
	srv, charts := chartRepoServer(t)
	files := teamsRepo(srv.URL)
	teams := files["clusters/c/teams.yaml"]
	teams = strings.Replace(teams, "      TEAM: a\n", `      TEAM: a
  retryInterval: 2m
  timeout: 3m
  wait: true
  healthChecks:
    - apiVersion: resources.azure.com/v1api20200601
      kind: ResourceGroup
      name: team-a-rg
      namespace: team-a
`, 1)
	teams = strings.Replace(teams, "  name: team-b\n", "  name: team-b\n  annotations:\n    kustomize.toolkit.fluxcd.io/reconcile: disabled\n", 1)
	teams = strings.Replace(teams, "      TEAM: c\n", "      TEAM: c\n  dependsOn:\n    - name: team-a\n", 1)
	files["clusters/c/teams.yaml"] = teams
	files["teams/a/kustomization.yaml"] = "resources: [rg.yaml, release.yaml, extra.yaml]\n"
	files["teams/a/extra.yaml"] = fluxKustomizationDoc("team-a-extra", "./extra/a", "")
	files["extra/a/rg.yaml"] = rg("extra")
	files["teams/b/release.yaml"] += "  timeout: 10m\n  install:\n    disableWait: true\n"
	files["teams/c/release.yaml"] += "  dependsOn:\n    - name: app\n      namespace: team-a\n"
	snap, err := fluxFetch(t, writeRepo(t, files), "clusters/c", Options{Strict: true, Charts: charts})
	if err != nil {
		t.Fatal(err)
	}
	const (
		ka = "Kustomization/flux-system/team-a"
		kb = "Kustomization/flux-system/team-b"
		kc = "Kustomization/flux-system/team-c"
	)
	m := time.Minute
	release := func(ns string) manifest.Unit {
		return manifest.Unit{Kind: "HelmRelease", Namespace: ns, Name: "app", File: "teams/" + ns[len(ns)-1:] + "/release.yaml", Line: 1,
			Parent: "Kustomization/flux-system/" + ns, Wait: true, Timeout: 5 * m, Interval: 5 * m, RetryInterval: 5 * m, Objects: 1}
	}
	ra, rb, rc := release("team-a"), release("team-b"), release("team-c")
	rb.Wait, rb.Timeout = false, 10*m
	rc.DependsOn = []string{"HelmRelease/team-a/app"}
	kust := func(name, file string, line int) manifest.Unit {
		return manifest.Unit{Kind: "Kustomization", Namespace: "flux-system", Name: name, File: file, Line: line,
			Interval: 10 * m, Timeout: 10 * m, RetryInterval: 10 * m, Objects: 2}
	}
	entry := kust("flux-system", "clusters/c/flux-system.yaml", 9)
	entry.Objects = 7 // the entry's documents: 2 GitRepository and Kustomization, 2 HelmRepositories, 3 Kustomizations
	a := kust("team-a", "clusters/c/teams.yaml", 1)
	a.RetryInterval, a.Timeout, a.Wait, a.Objects = 2*m, 3*m, true, 3
	a.HealthChecks = []manifest.UnitRef{{APIVersion: "resources.azure.com/v1api20200601", Kind: "ResourceGroup", Name: "team-a-rg", Namespace: "team-a"}}
	b := kust("team-b", "clusters/c/teams.yaml", lineOf(t, teams, "apiVersion: kustomize", 2))
	b.Suspended = true
	c := kust("team-c", "clusters/c/teams.yaml", lineOf(t, teams, "apiVersion: kustomize", 3))
	c.DependsOn = []string{ka}
	extra := kust("team-a-extra", "teams/a/extra.yaml", 1)
	extra.Namespace, extra.Parent, extra.Objects = "team-a", ka, 1 // team-a's targetNamespace
	want := []manifest.Unit{ra, rb, rc, entry, a, b, c, extra}
	if diff := cmp.Diff(want, snap.Units, cmpopts.IgnoreFields(manifest.Unit{}, "Errors")); diff != "" {
		t.Errorf("units (-want +got):\n%s", diff)
	}
	// Every object of a unit says which: a chart's its HelmRelease, a
	// Kustomization's that Kustomization.
	for _, o := range snap.Objects {
		want := map[string]string{"app": "HelmRelease/" + o.Namespace() + "/app", "extra": "Kustomization/team-a/team-a-extra"}[o.Name()]
		if want == "" {
			want = "Kustomization/flux-system/" + o.Namespace()
		}
		if got := manifest.UnitOf(o); got != want {
			t.Errorf("%s: unit %q, want %q", o.ID(), got, want)
		}
	}
}

// TestGitRendersAgainWhileAUnitRetries: a Git source renders the same
// commit again at the next Fetch while a unit failed on a registry that did
// not answer (manifest.Unit.Retry), even when the revision has no other
// source outside the repository; once the registry answers, the unit
// renders without a new commit.
func TestGitRendersAgainWhileAUnitRetries(t *testing.T) {
	var down atomic.Bool
	down.Store(true)
	charts, fetcher := flakyChartRepoServer(t, &down)
	files := teamsRepo(charts.URL)
	for _, team := range []string{"a", "b", "c"} {
		files["teams/"+team+"/release.yaml"] = strings.Replace(files["teams/"+team+"/release.yaml"], "name: charts", "name: flaky", 1)
	}
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	commit := repo.Commit(files, nil, "teams")
	r, err := New(Options{Flux: true, FluxPath: "clusters/c", Kustomize: true, Charts: fetcher})
	if err != nil {
		t.Fatal(err)
	}
	g, err := source.NewGit(source.GitOptions{URL: repo.URL(), Branch: repo.Branch(), CABundle: srv.CABundle(), CacheDir: t.TempDir(), Renderer: r})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := g.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := failedUnit(t, snap, nil, "HelmRelease/team-c/app", manifest.ReasonArtifactFailed); !u.Retry {
		t.Fatalf("registry down: unit %+v, want Retry", u)
	}
	down.Store(false)
	snap, err = g.Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(snap.Revision, commit) || failedCount(snap.Units) != 0 {
		t.Fatalf("registry back at the same commit: revision %s, units %v", snap.Revision, unitIDs(snap))
	}
	findID(t, snap.Objects, "team-c/ResourceGroup/app")
	// Nothing left to retry and a chart now read from outside: rendered
	// again at each Fetch as before (a new chart version is a new revision).
	if len(snap.External) == 0 {
		t.Errorf("no external sources: %v", snap.External)
	}
}

// TestFluxOtherRepositoryDown: a Kustomization whose GitRepository is
// another repository whose server does not answer fails alone with
// ArtifactFailed and Retry (rendered again without a new commit); the other
// Kustomizations render.
func TestFluxOtherRepositoryDown(t *testing.T) {
	down := httptest.NewTLSServer(http.NotFoundHandler())
	url := down.URL + "/team.git"
	down.Close() // connection refused from now on
	root := writeRepo(t, map[string]string{
		"clusters/c/source.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: team\n  namespace: flux-system\nspec:\n  url: " + url + "\n  ref:\n    branch: main\n",
		"clusters/c/team.yaml":   strings.Replace(fluxKustomizationDoc("team", "./apps", ""), "    name: flux-system\n", "    name: team\n", 1),
		"clusters/c/mine.yaml":   fluxKustomizationDoc("mine", "./mine", ""),
		"mine/rg.yaml":           rg("mine"),
	})
	opts := Options{Repositories: Repositories(&source.Repositories{CacheDir: t.TempDir()}), RepositoryURL: "https://git.example/platform.git"}
	snap, err := fluxFetch(t, root, "clusters/c", opts)
	u, err := failedUnit(t, snap, err, "Kustomization/flux-system/team", manifest.ReasonArtifactFailed)
	if !u.Retry || !errors.Is(err, ErrFluxSource) || !strings.Contains(err.Error(), "clusters/c/team.yaml:12: flux-system/Kustomization/team: spec.sourceRef.name: GitRepository flux-system/team") {
		t.Errorf("retry %v: %v", u.Retry, err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/mine"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
}

// TestFluxInvalidChildSpec: a Kustomization in another's output whose spec
// gitaso cannot read fails alone; the one that declared it renders its
// other objects.
func TestFluxInvalidChildSpec(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", ""),
		"one/b.yaml":        fluxKustomizationDoc("b", "./two", "  dependsOn: a\n"),
		"one/rg.yaml":       rg("one"),
		"two/rg.yaml":       rg("two"),
	})
	snap, err := fluxFetch(t, root, "clusters/c", Options{})
	_, err = failedUnit(t, snap, err, "Kustomization/flux-system/b", manifest.ReasonBuildFailed)
	if err == nil || !strings.Contains(err.Error(), "one/b.yaml:13: flux-system/Kustomization/b: spec.dependsOn: invalid") {
		t.Errorf("errors: %v", err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/one"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if u := snap.Units[slices.IndexFunc(snap.Units, func(u manifest.Unit) bool { return u.Name == "b" })]; u.Parent != "Kustomization/flux-system/a" {
		t.Errorf("parent %q", u.Parent)
	}
}

// TestRenderRefusesFailedUnits: Render and RenderSources, for callers that
// do not know units, refuse a revision with a failed unit, its errors among
// the revision's (a unit's absent objects must not look deleted);
// RenderUnits lists it.
func TestRenderRefusesFailedUnits(t *testing.T) {
	files := []source.File{
		{Path: "clusters/c/a.yaml", Data: []byte(fluxKustomizationDoc("a", "./missing", ""))},
		{Path: "clusters/c/b.yaml", Data: []byte(fluxKustomizationDoc("b", "./two", ""))},
		{Path: "two/rg.yaml", Data: []byte(rg("two"))},
	}
	r, err := New(Options{Flux: true, FluxPath: "clusters/c", Kustomize: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `clusters/c/a.yaml:8: flux-system/Kustomization/a: spec.path: "./missing"`
	if out, err := r.Render(context.Background(), files); out != nil || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Render: %d files, %v", len(out), err)
	}
	if out, _, err := r.RenderSources(context.Background(), files); out != nil || err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("RenderSources: %d files, %v", len(out), err)
	}
	res, err := r.RenderUnits(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	if f := res.FailedUnits(); len(f) != 1 || f[0].ID() != "Kustomization/flux-system/a" || !strings.Contains(f[0].Errors.Error(), want) {
		t.Errorf("failed units %+v", f)
	}
}
