package examples_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/cli"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

const (
	fluxTeamsDir      = "flux-teams"
	fluxTeamsRegistry = "fleetplatformacr"
)

// fluxTeamsFiles reads the flux-teams example, its platform-vars naming the emulated registry's login server.
func fluxTeamsFiles(t *testing.T, loginServer string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(fluxTeamsDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Base(p) == "README.md" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fluxTeamsDir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const vars = "clusters/prod/platform-vars.yaml"
	old := `ACR_LOGIN_SERVER: "fleetplatformacr.azurecr.io"`
	if !strings.Contains(files[vars], old) {
		t.Fatalf("%s has no %s", vars, old)
	}
	files[vars] = strings.Replace(files[vars], old, fmt.Sprintf("ACR_LOGIN_SERVER: %q", loginServer), 1)
	return files
}

// withRelease sets team-a's RELEASE (a tag of its resources): a change of a healthy team.
func withRelease(files map[string]string, release int) map[string]string {
	out := maps.Clone(files)
	const ks = "clusters/prod/teams.yaml"
	out[ks] = strings.Replace(out[ks], "TEAM: team-a\n      TEAM_SHORT: teama\n      RELEASE: \"1\"", fmt.Sprintf("TEAM: team-a\n      TEAM_SHORT: teama\n      RELEASE: \"%d\"", release), 1)
	return out
}

// teamBreak is one way a team's Kustomization or HelmRelease breaks in a platform of many teams.
type teamBreak struct {
	name   string
	unit   string // the unit that fails
	reason string
	edit   func(files map[string]string)
	// waits are units that wait for it (DependencyNotReady).
	waits []string
	// where begins the unit's first error, when set: the file and line to blame.
	where string
}

const teamB = "Kustomization/flux-system/team-b"

var teamBreaks = []teamBreak{
	{name: "patch matching nothing after a rename", unit: teamB, reason: "BuildFailed", where: "teams/b/kustomization.yaml:6: ", edit: func(f map[string]string) {
		f["teams/b/kustomization.yaml"] += "patches:\n  - path: owner.yaml\n"
		f["teams/b/owner.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: infra-old\nspec:\n  values:\n    tags:\n      owner: team-b\n"
	}},
	{name: "spec.path not created yet", unit: teamB, reason: "ArtifactFailed", edit: func(f map[string]string) {
		f["clusters/prod/teams.yaml"] = strings.Replace(f["clusters/prod/teams.yaml"], "path: ./teams/b\n", "path: ./teams/b-v2\n", 1)
	}},
	{name: "chart version not pushed yet", unit: "HelmRelease/team-b/infra", reason: "ArtifactFailed", edit: func(f map[string]string) {
		f["teams/b/kustomization.yaml"] += "patches:\n  - path: version.yaml\n"
		f["teams/b/version.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: infra\nspec:\n  chart:\n    spec:\n      version: 9.9.9\n"
	}},
	{name: "unset variable under strict substitution", unit: teamB, reason: "BuildFailed", edit: func(f map[string]string) {
		f["teams/b/kustomization.yaml"] += "patches:\n  - path: owner.yaml\n"
		f["teams/b/owner.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: infra\nspec:\n  values:\n    tags:\n      owner: ${TEAM_B_OWNER}\n"
	}},
	{name: "registry that does not answer", unit: "HelmRelease/team-b/infra", reason: "ArtifactFailed", edit: func(f map[string]string) {
		f["teams/b/kustomization.yaml"] += "resources:\n  - charts.yaml\npatches:\n  - path: source.yaml\n"
		f["teams/b/kustomization.yaml"] = strings.Replace(f["teams/b/kustomization.yaml"], "resources:\n  - ../base\n", "", 1)
		f["teams/b/kustomization.yaml"] = strings.Replace(f["teams/b/kustomization.yaml"], "resources:\n  - charts.yaml\n", "resources:\n  - ../base\n  - charts.yaml\n", 1)
		f["teams/b/charts.yaml"] = "apiVersion: source.toolkit.fluxcd.io/v1\nkind: HelmRepository\nmetadata:\n  name: team-b-charts\nspec:\n  type: oci\n  url: oci://127.0.0.1:1/helm\n"
		f["teams/b/source.yaml"] = "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n  name: infra\nspec:\n  chart:\n    spec:\n      sourceRef:\n        kind: HelmRepository\n        name: team-b-charts\n        namespace: team-b\n"
	}},
	{name: "dependsOn a broken team", unit: teamB, reason: "ArtifactFailed", waits: []string{"Kustomization/flux-system/team-c"}, edit: func(f map[string]string) {
		f["clusters/prod/teams.yaml"] = strings.Replace(f["clusters/prod/teams.yaml"], "path: ./teams/b\n", "path: ./teams/b-v2\n", 1)
		f["clusters/prod/teams.yaml"] = strings.Replace(f["clusters/prod/teams.yaml"], "  dependsOn:\n    - name: platform\n", "  dependsOn:\n    - name: platform\n    - name: team-b\n", 1)
	}},
}

// fluxTeams is the flux-teams example served over Git HTTPS beside the emulator, with gitaso's command line.
type fluxTeams struct {
	head    string // the newest commit
	em      *emutest.Env
	repo    *gittest.Repo
	files   map[string]string
	common  []string
	stateDB string
}

func newFluxTeams(t *testing.T) *fluxTeams {
	t.Helper()
	ctx := t.Context()
	em := emutest.New(t, emutest.Roles("Contributor", "User Access Administrator", "AcrPull"),
		emutest.Emulator(emulator.WithRegistry(fluxTeamsRegistry), emulator.WithoutThrottling()))
	if _, err := em.Emu.PushHelmChart(ctx, fluxTeamsRegistry, "helm", packageChart(t, "team-infra", nil)); err != nil {
		t.Fatal(err)
	}
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("fleet")
	dir := t.TempDir()
	gitCA := filepath.Join(dir, "git-ca.pem")
	if err := os.WriteFile(gitCA, srv.CABundle(), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range em.SecretData(em.Principal) {
		t.Setenv(k, v)
	}
	ft := &fluxTeams{em: em, repo: repo, files: fluxTeamsFiles(t, em.Emu.RegistryHost(fluxTeamsRegistry)), stateDB: filepath.Join(dir, "gitaso.db")}
	ft.common = []string{"--repo", repo.URL(), "--branch", repo.Branch(), "--git-ca-file", gitCA,
		"--flux", "--path", "clusters/prod", "--substitute-strict",
		"--cloud-config", em.CloudFile, "--state", ft.stateDB,
		"--cache-dir", filepath.Join(dir, "git"), "--chart-cache", filepath.Join(dir, "charts"), "--parallelism", "8"}
	return ft
}

// commit replaces the repository's files with files.
func (ft *fluxTeams) commit(files map[string]string, msg string) string {
	var removed []string
	for p := range ft.files {
		if _, ok := files[p]; !ok {
			removed = append(removed, p)
		}
	}
	ft.files = maps.Clone(files)
	ft.head = ft.repo.Commit(files, removed, msg)
	return ft.head
}

// apply runs gitaso apply and returns its exit code.
func (ft *fluxTeams) apply(t *testing.T) (int, string) {
	t.Helper()
	out, stderr, _, err := gitaso(t.Context(), append([]string{"apply"}, ft.common...)...)
	var exit *cli.ExitError
	switch {
	case err == nil:
		return 0, out + stderr
	case errors.As(err, &exit):
		return exit.Code, out + stderr + err.Error()
	}
	t.Fatalf("gitaso apply: %v\n%s\n%s", err, out, stderr)
	return 0, ""
}

// stateOf reads the units and runs gitaso recorded (the command has closed the state file).
func (ft *fluxTeams) stateOf(t *testing.T) (map[string]record.Unit, []record.Run) {
	t.Helper()
	db, err := state.Open(ft.stateDB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	units, err := db.Units()
	if err != nil {
		t.Fatal(err)
	}
	runs, err := db.Runs(1)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]record.Unit{}
	for _, u := range units {
		m[u.ID()] = u
	}
	return m, runs
}

// azureState is every resource the emulator holds, by ARM ID, with its body.
func azureState(em *emutest.Env) map[string]string {
	out := map[string]string{}
	for _, r := range em.Emu.Resources() {
		out[strings.ToLower(r.ID)] = string(r.Body)
	}
	return out
}

// TestFluxTeamsOneTeamBroken runs the flux-teams example (a platform Kustomization, three teams each releasing the
// platform's ASO library chart) as its owners would: through gitaso apply, after a healthy first apply, a commit
// breaks team-b in each way a team breaks in a platform repository, while team-a changes in the same commit. Each
// time team-a's change is applied, team-b's objects in Azure are exactly as they were (nothing deleted, nothing
// changed), the run is partial with exit code 6, and team-b's unit says why and which revision it last applied;
// a team whose dependsOn names team-b waits. The fix applies team-b again.
func TestFluxTeamsOneTeamBroken(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: emulator, registry, Git server")
	}
	ft := newFluxTeams(t)
	healthy := ft.files
	good := ft.commit(healthy, "three teams")
	if code, out := ft.apply(t); code != 0 {
		t.Fatalf("healthy apply: exit %d\n%s", code, out)
	}
	units, _ := ft.stateOf(t)
	if len(units) != 8 { // flux-system, platform, three teams, their three releases
		t.Errorf("%d units after the healthy apply, want 8: %v", len(units), units)
	}
	for id, u := range units {
		if u.Ready.Status != "True" || !strings.HasPrefix(u.LastAppliedRevision, good) {
			t.Errorf("%s after the healthy apply: %+v at %s", id, u.Ready, u.LastAppliedRevision)
		}
	}
	release := 1
	for _, br := range teamBreaks {
		t.Run(br.name, func(t *testing.T) {
			before := azureState(ft.em)
			held := ft.heldResources(t)
			if len(held) == 0 {
				t.Fatal("team-b has no resources in state before the break")
			}
			lastGood := ft.head
			release++
			broken := withRelease(healthy, release)
			br.edit(broken)
			rev := ft.commit(broken, "team-b: "+br.name+"; team-a: release "+fmt.Sprint(release))
			code, out := ft.apply(t)
			if code != cli.ExitPartial {
				t.Fatalf("exit %d, want %d (partial)\n%s", code, cli.ExitPartial, out)
			}
			checkAzure(t, before, azureState(ft.em), release)
			if got := ft.heldResources(t); !maps.Equal(got, held) {
				t.Errorf("team-b's resources in state changed: %v, were %v", got, held)
			}
			units, runs := ft.stateOf(t)
			u := units[br.unit]
			if u.Ready.Status != "False" || u.Ready.Reason != br.reason || !strings.HasPrefix(u.LastAppliedRevision, lastGood) || len(u.Errors) == 0 {
				t.Errorf("%s: ready %+v, last applied %s (want %s), errors %q", br.unit, u.Ready, u.LastAppliedRevision, lastGood, u.Errors)
			}
			checkErrors(t, br.unit, u.Errors)
			if br.where != "" && (len(u.Errors) == 0 || !strings.HasPrefix(u.Errors[0], br.where)) {
				t.Errorf("%s: errors %q, want the first to begin with %q", br.unit, u.Errors, br.where)
			}
			for _, w := range br.waits {
				if u := units[w]; u.Ready.Reason != "DependencyNotReady" {
					t.Errorf("%s: %+v, want DependencyNotReady", w, u.Ready)
				}
			}
			if a := units["Kustomization/flux-system/team-a"]; a.Ready.Status != "True" || !strings.HasPrefix(a.LastAppliedRevision, rev) {
				t.Errorf("team-a: %+v at %s, want Ready at %s", a.Ready, a.LastAppliedRevision, rev)
			}
			if len(runs) == 0 || runs[0].Outcome != record.OutcomePartial {
				t.Errorf("last run %+v, want partial", runs)
			}
			// Fixed: team-b applies again.
			ft.commit(withRelease(healthy, release), "fix team-b")
			if code, out := ft.apply(t); code != 0 {
				t.Fatalf("fixed: exit %d\n%s", code, out)
			}
			units, _ = ft.stateOf(t)
			for id, u := range units {
				if u.Ready.Status != "True" {
					t.Errorf("after the fix %s: %+v", id, u.Ready)
				}
			}
		})
	}
}

// TestFluxTeamsServe: the same through gitaso serve: a broken commit shows in the API (units, runs) and the
// metrics, team-b's unit False with its error and last applied revision, the others Ready.
func TestFluxTeamsServe(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: emulator, registry, Git server")
	}
	ft := newFluxTeams(t)
	good := ft.commit(ft.files, "three teams")
	addr, api, served, serveErr := ft.serve(t)
	waitRun(t, api, served, serveErr, func(r run) bool { return strings.HasPrefix(r.Revision, good) && r.Outcome == "succeeded" })
	before := azureState(ft.em)
	broken := withRelease(ft.files, 2)
	teamBreaks[1].edit(broken) // spec.path not created yet
	rev := ft.commit(broken, "team-b moves its path before creating it")
	start := time.Now()
	var units struct {
		Items []record.Unit `json:"items"`
	}
	deadline := time.Now().Add(60 * time.Second)
	var b record.Unit
	for {
		if err := getJSON(api+"units", &units); err == nil {
			for _, u := range units.Items {
				if u.ID() == teamB && strings.HasPrefix(u.LastAttemptedRevision, rev) {
					b = u
				}
			}
		}
		if b.Name != "" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("the broken commit showed in the API after %s", time.Since(start).Round(time.Millisecond))
	if b.Ready.Status != "False" || b.Ready.Reason != "ArtifactFailed" || !strings.HasPrefix(b.LastAppliedRevision, good) || len(b.Errors) == 0 ||
		!strings.Contains(b.Errors[0], "clusters/prod/teams.yaml") {
		t.Fatalf("team-b in the API: %+v\n%s", b, serveErr.String())
	}
	for _, u := range units.Items {
		switch {
		case u.ID() == "HelmRelease/team-b/infra":
			// Declared by team-b's Kustomization, unknown at this revision.
			if u.Ready.Reason != "ParentNotReady" || !strings.HasPrefix(u.LastAppliedRevision, good) {
				t.Errorf("%s: %+v at %s, want ParentNotReady, last applied %s", u.ID(), u.Ready, u.LastAppliedRevision, good)
			}
		case u.ID() != teamB && u.Ready.Status != "True":
			t.Errorf("%s: %+v, want Ready", u.ID(), u.Ready)
		}
	}
	r := waitRun(t, api, served, serveErr, func(r run) bool { return strings.HasPrefix(r.Revision, rev) })
	if r.Outcome != "partial" {
		t.Errorf("run of the broken commit: %+v, want partial", r)
	}
	checkErrors(t, teamB, b.Errors)
	checkAzure(t, before, azureState(ft.em), 2)
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	mb, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	metrics := string(mb)
	if !strings.Contains(metrics, `gitaso_units{ready="False"} 2`) || !strings.Contains(metrics, `gitaso_unit_ready{kind="Kustomization",name="team-b",namespace="flux-system",reason="ArtifactFailed"} 0`) {
		t.Errorf("/metrics lacks team-b's failure:\n%s", grepLines(metrics, "gitaso_unit"))
	}
}

// grepLines returns the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// teamBUnits are the units of team-b: its Kustomization and its release.
var teamBUnits = []string{teamB, "HelmRelease/team-b/infra"}

// heldResources returns team-b's resources in state (those of its units), by key, with the hash of the body last
// applied: a failed unit's resources must neither change nor go.
func (ft *fluxTeams) heldResources(t *testing.T) map[string]string {
	t.Helper()
	db, err := state.Open(ft.stateDB)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rs {
		if slices.Contains(teamBUnits, r.Unit) {
			out[r.Key()] = r.AppliedHash
		}
	}
	return out
}

// checkAzure compares the emulator's resources before and after a commit that breaks team-b and sets team-a's
// release: nothing deleted, team-b's resources exactly as they were, team-a's change applied.
func checkAzure(t *testing.T, before, after map[string]string, release int) {
	t.Helper()
	var teamBs int
	for id, body := range before {
		got, ok := after[id]
		switch {
		case !ok:
			t.Errorf("%s was deleted", id)
		case strings.Contains(id, "/team-b-"):
			teamBs++
			if got != body {
				t.Errorf("team-b's %s changed in Azure:\n%s\nwas\n%s", id, got, body)
			}
		}
	}
	if teamBs == 0 {
		t.Error("team-b had no resources in Azure before the break")
	}
	var tagged int
	for id, body := range after {
		if strings.Contains(id, "/team-a-") && strings.Contains(body, fmt.Sprintf(`"release":"release-%d"`, release)) {
			tagged++
		}
	}
	if tagged == 0 {
		t.Errorf("team-a's change (release %d) was not applied", release)
	}
}

// fileLine is how a unit's error begins: the file and line that caused it.
var fileLine = regexp.MustCompile(`^[^\s:]+\.yaml:\d+: `)

// checkErrors: a failed unit has errors, each naming the file and line that caused it.
func checkErrors(t *testing.T, unit string, errs []string) {
	t.Helper()
	if len(errs) == 0 {
		t.Errorf("%s failed with no error", unit)
	}
	for _, e := range errs {
		if !fileLine.MatchString(e) {
			t.Errorf("%s: error %q does not begin with file:line", unit, e)
		}
	}
}

// TestFluxTeamsServeEveryBreak: each way team-b breaks, through gitaso serve, after a healthy revision: the run of
// the broken commit is partial, team-a's change is applied, team-b's resources are unchanged in Azure and still
// listed under its unit, and GET /api/v1/units says which unit failed, why, where (file:line) and which revision
// it last applied; units whose dependsOn names team-b wait. The fix makes every unit Ready again.
func TestFluxTeamsServeEveryBreak(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: emulator, registry, Git server")
	}
	ft := newFluxTeams(t)
	healthy := ft.files
	good := ft.commit(healthy, "three teams")
	_, api, served, serveErr := ft.serve(t)
	waitRun(t, api, served, serveErr, func(r run) bool { return strings.HasPrefix(r.Revision, good) && r.Outcome == "succeeded" })
	release := 1
	for _, br := range teamBreaks {
		t.Run(br.name, func(t *testing.T) {
			before := azureState(ft.em)
			lastGood := ft.head
			release++
			broken := withRelease(healthy, release)
			br.edit(broken)
			rev := ft.commit(broken, "team-b: "+br.name+"; team-a: release "+fmt.Sprint(release))
			if r := waitRun(t, api, served, serveErr, func(r run) bool { return strings.HasPrefix(r.Revision, rev) }); r.Outcome != "partial" {
				t.Errorf("run of the broken commit: %+v, want partial", r)
			}
			checkAzure(t, before, azureState(ft.em), release)
			var list struct {
				Items []record.Unit `json:"items"`
			}
			if err := getJSON(api+"units", &list); err != nil {
				t.Fatal(err)
			}
			units := map[string]record.Unit{}
			for _, u := range list.Items {
				units[u.ID()] = u
			}
			u := units[br.unit]
			if u.Ready.Status != "False" || u.Ready.Reason != br.reason || !strings.HasPrefix(u.LastAppliedRevision, lastGood) {
				t.Errorf("%s in the API: ready %+v, last applied %s (want %s)", br.unit, u.Ready, u.LastAppliedRevision, lastGood)
			}
			checkErrors(t, br.unit, u.Errors)
			if br.where != "" && (len(u.Errors) == 0 || !strings.HasPrefix(u.Errors[0], br.where)) {
				t.Errorf("%s: errors %q, want the first to begin with %q", br.unit, u.Errors, br.where)
			}
			for _, w := range br.waits {
				if u := units[w]; u.Ready.Reason != "DependencyNotReady" {
					t.Errorf("%s: %+v, want DependencyNotReady", w, u.Ready)
				}
			}
			if a := units["Kustomization/flux-system/team-a"]; a.Ready.Status != "True" || !strings.HasPrefix(a.LastAppliedRevision, rev) {
				t.Errorf("team-a: %+v at %s, want Ready at %s", a.Ready, a.LastAppliedRevision, rev)
			}
			var detail struct {
				Resources []struct {
					Name string `json:"name"`
				} `json:"resources"`
			}
			if err := getJSON(api+"units/HelmRelease/team-b/infra", &detail); err != nil {
				t.Fatal(err)
			}
			if len(detail.Resources) == 0 {
				t.Error("team-b's release lists no resources: its objects left the state")
			}
			// Fixed: every unit Ready again.
			fixed := ft.commit(withRelease(healthy, release), "fix team-b")
			if r := waitRun(t, api, served, serveErr, func(r run) bool { return strings.HasPrefix(r.Revision, fixed) }); r.Outcome != "succeeded" {
				t.Fatalf("run of the fix: %+v\n%s", r, serveErr.String())
			}
			if err := getJSON(api+"units", &list); err != nil {
				t.Fatal(err)
			}
			for _, u := range list.Items {
				if u.Ready.Status != "True" {
					t.Errorf("after the fix %s: %+v", u.ID(), u.Ready)
				}
			}
		})
	}
}

// serve starts gitaso serve (200 ms interval) on the example's repository,
// stopped when the test ends: its address, API base, end and stderr.
func (ft *fluxTeams) serve(t *testing.T) (addr, api string, served chan error, serveErr *syncBuffer) {
	t.Helper()
	addr = "127.0.0.1:" + freePort(t)
	ctx, stop := context.WithCancel(t.Context())
	var serveOut syncBuffer
	serveErr = &syncBuffer{}
	served = make(chan error, 1)
	go func() {
		served <- cli.Run(ctx, append([]string{"serve", "--listen", addr, "--interval", "200ms"}, ft.common...), &serveOut, serveErr)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("gitaso serve did not stop")
		}
	})
	return addr, "http://" + addr + "/api/v1/", served, serveErr
}
