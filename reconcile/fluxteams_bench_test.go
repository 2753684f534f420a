package reconcile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// fluxTeamsRepo writes a platform repository of teams: per team a Flux
// Kustomization (a resource group and perTeam/2-1 identities) and a
// HelmRelease of the repository's chart (a resource group and perTeam/2-1
// identities), perTeam ASO objects in all.
func fluxTeamsRepo(tb testing.TB, root string, teams, perTeam int) {
	tb.Helper()
	write := func(p, s string) {
		f := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	half := perTeam / 2
	write("charts/team/Chart.yaml", "apiVersion: v2\nname: team\nversion: 1.0.0\n")
	write("charts/team/templates/infra.yaml", `{{- $team := required "values.team is required" .Values.team -}}
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: {{ $team }}-chart-rg
spec:
  location: westeurope
{{- range $i := until (int .Values.identities) }}
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: {{ $team }}-chart-id-{{ $i }}
spec:
  location: westeurope
  owner:
    name: {{ $team }}-chart-rg
{{- end }}
`)
	var ks strings.Builder
	for i := range teams {
		team := fmt.Sprintf("team-%02d", i)
		fmt.Fprintf(&ks, `---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: %[1]s
  namespace: flux-system
spec:
  interval: 10m
  path: ./teams/%[1]s
  prune: true
  targetNamespace: %[1]s
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      TEAM: %[1]s
`, team)
		var objs strings.Builder
		fmt.Fprintf(&objs, "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: ${TEAM}-rg\nspec:\n  location: westeurope\n")
		for j := range half - 1 {
			fmt.Fprintf(&objs, "---\napiVersion: managedidentity.azure.com/v1api20230131\nkind: UserAssignedIdentity\nmetadata:\n  name: ${TEAM}-id-%d\nspec:\n  location: westeurope\n  owner:\n    name: ${TEAM}-rg\n", j)
		}
		fmt.Fprintf(&objs, "---\napiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: infra\nspec:\n  interval: 10m\n  chart:\n    spec:\n      chart: ./charts/team\n      sourceRef:\n        kind: GitRepository\n        name: flux-system\n        namespace: flux-system\n  values:\n    team: ${TEAM}\n    identities: %d\n", perTeam-half-1)
		write("teams/"+team+"/objects.yaml", objs.String())
	}
	write("clusters/c/teams.yaml", ks.String())
}

// breakTeams breaks three teams, each in its own way: a spec.path not
// created yet, an unset variable under strict substitution, a chart value
// missing (a template error).
func breakTeams(tb testing.TB, root string, teams int) []string {
	tb.Helper()
	t1, t2, t3 := fmt.Sprintf("team-%02d", teams/5), fmt.Sprintf("team-%02d", teams/2), fmt.Sprintf("team-%02d", 4*teams/5)
	ks := filepath.Join(root, "clusters/c/teams.yaml")
	b, err := os.ReadFile(ks)
	if err != nil {
		tb.Fatal(err)
	}
	s := strings.Replace(string(b), "path: ./teams/"+t1+"\n", "path: ./teams/"+t1+"-v2\n", 1)
	if err := os.WriteFile(ks, []byte(s), 0o644); err != nil {
		tb.Fatal(err)
	}
	appendTo := func(p, text string) {
		f, err := os.OpenFile(filepath.Join(root, p), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			tb.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(text); err != nil {
			tb.Fatal(err)
		}
	}
	appendTo("teams/"+t2+"/objects.yaml", "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owner\ndata:\n  owner: ${TEAM_OWNER}\n")
	p := filepath.Join(root, "teams/"+t3+"/objects.yaml")
	b, err = os.ReadFile(p)
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), "    team: ${TEAM}\n", "", 1)), 0o644); err != nil {
		tb.Fatal(err)
	}
	return []string{"Kustomization/flux-system/" + t1, "Kustomization/flux-system/" + t2, "HelmRelease/" + t3 + "/infra"}
}

// BenchmarkFluxTeams is issue 25's figure: a platform repository of 40 teams
// (40 Flux Kustomizations, 40 HelmReleases, 4,000 ASO objects) against the
// emulator (ARM's throttling off: the figure is gitaso's, not ARM's bucket),
// 3 teams broken. It reports the healthy first apply (apply-s), the plan of
// the broken revision (plan-s, per op: units isolated, the broken teams'
// objects kept as last applied), the apply of the broken revision
// (partial-apply-s), and the time from the broken revision on disk to its
// failures in GET /api/v1/units of a running loop (visible-s).
func BenchmarkFluxTeams(b *testing.B) {
	teams, perTeam := 40, 100
	if v := os.Getenv("GITASO_BENCH_TEAMS"); v != "" {
		fmt.Sscan(v, &teams)
	}
	// ARM's throttling off in the emulator and in gitaso's client (its
	// buckets of ARM's sizes would make the first apply of 4,000 objects
	// take 400 s of waiting at 10 writes/s).
	env := emutest.New(b, emutest.Emulator(emulator.WithoutThrottling()),
		emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
	root := b.TempDir()
	fluxTeamsRepo(b, root, teams, perTeam)
	rnd, err := render.New(render.Options{Kustomize: true, Flux: true, FluxPath: "clusters/c", Substitute: true, Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	db, err := state.Open(filepath.Join(b.TempDir(), "state.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Parallelism = 32
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("GITASO_BENCH_LOG") != "" {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	rec := reconcile.New(source.NewDir(root, "", source.WithRenderer(rnd)), db, env.Clients, cfg, quiet)
	ctx := context.Background()
	start := time.Now()
	rep, err := rec.Once(ctx, reconcile.Options{Trigger: "bench"})
	applyS := time.Since(start).Seconds()
	if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		b.Fatalf("healthy apply: %v %s %s", err, rep.Run.Outcome, rep.Run.Error)
	}
	if n := len(rep.Plan.Resources); n != teams*perTeam {
		b.Fatalf("%d resources, want %d", n, teams*perTeam)
	}
	broken := breakTeams(b, root, teams)
	var plan *reconcile.Report
	for b.Loop() {
		plan, err = rec.PlanOnly(ctx, false)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if f := failedNotParent(plan.Plan.FailedUnits()); len(f) != len(broken) {
		b.Fatalf("%d failed units, want %d: %v", len(f), len(broken), f)
	}
	start = time.Now()
	rep, err = rec.Once(ctx, reconcile.Options{Trigger: "bench"})
	partialS := time.Since(start).Seconds()
	if err != nil || rep.Run.Outcome != record.OutcomePartial {
		b.Fatalf("broken revision: %v %s %s", err, rep.Run.Outcome, rep.Run.Error)
	}

	// Fixed again, then a running loop (as gitaso serve) over the same
	// state: the time from the broken revision on disk to its failures in
	// the API.
	fluxTeamsRepo(b, root, teams, perTeam)
	if rep, err = rec.Once(ctx, reconcile.Options{Trigger: "bench"}); err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		b.Fatalf("fixed revision: %v %s %s", err, rep.Run.Outcome, rep.Run.Error)
	}
	cfg.Interval = 100 * time.Millisecond
	rec2 := reconcile.New(source.NewDir(root, "", source.WithRenderer(rnd)), db, env.Clients, cfg, quiet)
	srv := httptest.NewServer(api.New(db, api.Options{Ready: rec2.Ready, Logger: quiet}))
	defer srv.Close()
	lctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec2.Loop(lctx) }()
	defer func() { stop(); <-done }()
	waitUnits(b, srv.URL, func(us []record.Unit) bool {
		for _, u := range us {
			if u.Ready.Status != record.StatusTrue {
				return false
			}
		}
		return len(us) == 2*teams
	})
	time.Sleep(300 * time.Millisecond) // the loop's startup run is over
	start = time.Now()
	breakTeams(b, root, teams)
	waitUnits(b, srv.URL, func(us []record.Unit) bool {
		n := 0
		for _, u := range us {
			if u.Failing() {
				n++
			}
		}
		return n == 2*len(broken)-1 // and the releases of the two broken Kustomizations: ParentNotReady
	})
	visibleS := time.Since(start).Seconds()
	b.ReportMetric(applyS, "apply-s")
	b.ReportMetric(partialS, "partial-apply-s")
	b.ReportMetric(visibleS, "visible-s")
	b.ReportMetric(float64(len(rep.Plan.Resources)), "objects")
}

// waitUnits polls GET /api/v1/units until ok holds (2 minutes at most).
func waitUnits(tb testing.TB, base string, ok func([]record.Unit) bool) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/units")
		if err == nil {
			var body struct {
				Items []record.Unit `json:"items"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			if err == nil && ok(body.Items) {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatal("the units API never showed what was waited for")
}

// failedNotParent names the failed units but those whose parent failed.
func failedNotParent(us []record.Unit) []string {
	var out []string
	for _, u := range us {
		if u.Ready.Reason != "ParentNotReady" {
			out = append(out, u.ID())
		}
	}
	return out
}
