package examples_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/cli"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/internal/syncbuf"
	"github.com/gitaso/gitaso/source/charts"
)

// fluxHelmRegistry is the emulated Azure Container Registry the example's charts are pushed to.
const fluxHelmRegistry = "sndplatformcr01"

// gitaso runs the gitaso command line (the binary's code path) and returns stdout, stderr, how long it took and
// the error.
func gitaso(ctx context.Context, args ...string) (string, string, time.Duration, error) {
	var out, errb bytes.Buffer
	start := time.Now()
	err := cli.Run(ctx, args, &out, &errb)
	return out.String(), errb.String(), time.Since(start), err
}

// syncBuffer is a log sink safe for concurrent writers and a reader.
type syncBuffer = syncbuf.Buffer

// TestFluxHelmEndToEnd runs the flux-helm example as a platform team would: the emulator serves ARM, Entra ID
// and an Azure Container Registry; the team-infra chart is packaged with its library vendored and pushed to the
// registry (helm push); the repository is served over Git HTTPS; gitaso plan and apply (the binary's code
// path, --flux) pull the chart through ACR's token exchange with gitaso's own global credential (a service
// principal with AcrPull besides the platform's Contributor and User Access Administrator) and create every
// resource, Ready in the emulator. Then the platform pushes team-infra 1.1.0 (a new default tag), which
// matches the HelmRelease's 1.x: gitaso serve's next poll plans and applies it, without a commit.
func TestFluxHelmEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end to end: emulator, registry, Git server")
	}
	ctx := t.Context()
	em := emutest.New(t, emutest.Roles("Contributor", "User Access Administrator", "AcrPull"),
		emutest.Emulator(emulator.WithRegistry(fluxHelmRegistry)))
	loginServer := em.Emu.RegistryHost(fluxHelmRegistry)
	pushed, err := em.Emu.PushHelmChart(ctx, fluxHelmRegistry, "helm", packageChart(t, "team-infra", nil))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pushed %+v to %s", pushed, loginServer)

	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("flux-platform")
	rev := repo.Commit(fluxHelmRepo(t, loginServer), nil, "flux platform with team-a's claims service")
	dir := t.TempDir()
	gitCA := filepath.Join(dir, "git-ca.pem")
	if err := os.WriteFile(gitCA, srv.CABundle(), 0o600); err != nil {
		t.Fatal(err)
	}
	// gitaso's global credential, as ASO reads it from its environment.
	sp := em.SecretData(em.Principal)
	for k, v := range sp {
		t.Setenv(k, v)
	}
	common := []string{"--repo", repo.URL(), "--branch", repo.Branch(), "--git-ca-file", gitCA,
		"--flux", "--path", "clusters/snd", "--substitute-strict",
		"--cloud-config", em.CloudFile, "--state", filepath.Join(dir, "gitaso.db"),
		"--cache-dir", filepath.Join(dir, "git"), "--chart-cache", filepath.Join(dir, "charts"),
		"--parallelism", "8"}

	// gitaso plan: every resource a create, each naming its HelmRelease and chart.
	out, stderr, planTime, err := gitaso(ctx, append([]string{"plan"}, common...)...)
	var exit *cli.ExitError
	if !errors.As(err, &exit) || exit.Code != 2 {
		t.Fatalf("gitaso plan: %v (want exit code 2: changes pending)\n%s\n%s", err, out, stderr)
	}
	t.Logf("gitaso plan took %s:\n%s", planTime.Round(time.Millisecond), out)
	if got := strings.Count(out, "will be created"); got != len(fluxHelmResources) {
		t.Errorf("plan creates %d resources, want %d", got, len(fluxHelmResources))
	}
	for _, r := range fluxHelmResources {
		if !strings.Contains(out, fmt.Sprintf("team-a/%s/%s will be created", r.kind, r.name)) {
			t.Errorf("plan does not create team-a/%s/%s", r.kind, r.name)
		}
	}
	// Where each resource came from: the chart the revision took, and each resource's origin.
	if !strings.Contains(out, "chart team-infra@1.0.0 for HelmRelease team-a/claims-infra (sha256:") {
		t.Errorf("the plan does not name the chart the revision took")
	}
	origin := `origin     = "HelmRelease team-a/claims-infra, chart team-infra@1.0.0, template team-infra/templates/infra.yaml, Kustomization config-cluster-flux/services"`
	if got := strings.Count(out, origin); got != len(fluxHelmResources) {
		t.Errorf("%d resources say %s, want %d", got, origin, len(fluxHelmResources))
	}
	jsonOut, stderr, _, err := gitaso(ctx, append([]string{"plan", "-o", "json"}, common...)...)
	if !errors.As(err, &exit) || exit.Code != 2 {
		t.Fatalf("gitaso plan -o json: %v\n%s", err, stderr)
	}
	var plan struct {
		Revision  string `json:"revision"`
		Resources []struct {
			Kind   string `json:"kind"`
			Name   string `json:"name"`
			File   string `json:"file"`
			Origin struct {
				HelmRelease string `json:"helmRelease"`
				Chart       string `json:"chart"`
			} `json:"origin"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(jsonOut), &plan); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(plan.Revision, rev) {
		t.Errorf("plan revision %s, want commit %s (and its charts)", plan.Revision, rev)
	}
	for _, r := range plan.Resources {
		if r.Origin.HelmRelease != "team-a/claims-infra" || r.Origin.Chart != "team-infra@1.0.0" || r.File != "services/team-a/claims-infra.yaml" {
			t.Errorf("plan: %s/%s from %s, origin %+v: want HelmRelease team-a/claims-infra, chart team-infra@1.0.0", r.Kind, r.Name, r.File, r.Origin)
		}
	}
	exchanges := registryCalls(em.Emu, "/oauth2/exchange", em.Principal.ObjectID)
	if exchanges == 0 {
		t.Errorf("the chart was not pulled through ACR's token exchange with gitaso's credential (principal %s); registry requests:\n%s",
			em.Principal.ObjectID, registryLog(em.Emu))
	}

	// gitaso apply: everything created and Ready.
	out, stderr, applyTime, err := gitaso(ctx, append([]string{"apply"}, common...)...)
	if err != nil {
		t.Fatalf("gitaso apply: %v\n%s\n%s", err, out, stderr)
	}
	t.Logf("gitaso apply took %s:\n%s", applyTime.Round(time.Millisecond), out)
	if !strings.Contains(out, fmt.Sprintf("%d applied, 0 unchanged, 0 deleted, 0 detached, 0 observed, 0 failed, 0 skipped.", len(fluxHelmResources))) {
		t.Errorf("apply summary: want %d applied, nothing failed", len(fluxHelmResources))
	}
	for _, r := range fluxHelmResources {
		if r.armID == "" {
			continue
		}
		if _, err := em.Client.Get(ctx, "/subscriptions/"+em.Sub+r.armID, r.apiVersion); err != nil {
			t.Errorf("%s/%s is not in Azure: %v", r.kind, r.name, err)
		}
	}

	// The chart is cached beside --chart-cache by digest; an air-gapped plan (--charts-offline) reads it there and
	// asks the registry nothing.
	if ents, err := os.ReadDir(filepath.Join(dir, "charts")); err != nil || len(ents) == 0 {
		t.Errorf("--chart-cache %s holds nothing after apply (%v)", filepath.Join(dir, "charts"), err)
	}
	before := len(registryLog(em.Emu))
	out, stderr, offlineTime, err := gitaso(ctx, append([]string{"plan", "--charts-offline"}, common...)...)
	if err != nil {
		t.Fatalf("gitaso plan --charts-offline after apply: %v (want exit code 0: nothing to do)\n%s\n%s", err, out, stderr)
	}
	t.Logf("gitaso plan --charts-offline took %s", offlineTime.Round(time.Millisecond))
	if after := len(registryLog(em.Emu)); after != before {
		t.Errorf("plan --charts-offline asked the registry:\n%s", registryLog(em.Emu)[before:])
	}

	// gitaso serve: the startup run finds nothing to do; team-infra 1.1.0 is then pushed and the next poll
	// applies it without a commit.
	addr := "127.0.0.1:" + freePort(t)
	serveCtx, stop := context.WithCancel(ctx)
	var serveOut, serveErr syncBuffer
	served := make(chan error, 1)
	go func() {
		served <- cli.Run(serveCtx, append([]string{"serve", "--listen", addr, "--interval", "300ms", "--log-level", "debug"}, common...), &serveOut, &serveErr)
	}()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("gitaso serve: %v\n%s", err, serveErr.String())
			}
		case <-time.After(30 * time.Second):
			t.Error("gitaso serve did not stop")
		}
	})
	api := "http://" + addr + "/api/v1/"
	startup := waitRun(t, api, served, &serveErr, func(r run) bool { return r.Trigger == "startup" })
	if !strings.HasPrefix(startup.Revision, rev) || startup.Outcome != "succeeded" || startup.Counts["no-op"] != len(fluxHelmResources) {
		t.Errorf("serve's startup run: %+v (want revision %s, succeeded, nothing to do)", startup, rev)
	}
	checkReady(t, api, len(fluxHelmResources))

	v110 := chart110(t)
	if _, err := em.Emu.PushHelmChart(ctx, fluxHelmRegistry, "helm", v110); err != nil {
		t.Fatal(err)
	}
	pushedAt := time.Now()
	// The fetcher lists a registry's tags again once charts.DefaultIndexTTL has passed (as Flux reads a
	// HelmRepository again every spec.interval).
	wait := charts.DefaultIndexTTL + 20*time.Second
	runs, ok := waitRunsFor(api, wait, func(r run) bool { return r.ID > startup.ID && r.FinishedAt != "" })
	if !ok {
		t.Fatalf("gitaso serve did not notice team-infra 1.1.0 (pushed to the registry, matching the HelmRelease's 1.x) "+
			"within %s of polls every 300 ms: the loop's revision does not include the charts' versions. Runs: %+v", wait, runs)
	}
	latest := runs[len(runs)-1]
	t.Logf("team-infra 1.1.0 applied %s after the push: run %+v", time.Since(pushedAt).Round(time.Millisecond), latest)
	if latest.Outcome != "succeeded" || !strings.HasPrefix(latest.Revision, rev) || latest.Revision == startup.Revision ||
		latest.Trigger != "interval" || latest.Counts["update"] != 3 {
		t.Errorf("run after the chart push: %+v (want a poll, succeeded, a new revision of commit %s, the 3 tagged resources updated)", latest, rev)
	}
	for _, r := range fluxHelmResources[:4] { // the tagged ones
		if r.kind == "FederatedIdentityCredential" {
			continue
		}
		b, err := em.Client.Get(ctx, "/subscriptions/"+em.Sub+r.armID, r.apiVersion)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Tags map[string]string `json:"tags"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s/%s: %v", r.kind, r.name, err)
		}
		if got.Tags["data-classification"] != "internal" {
			t.Errorf("%s/%s tags after 1.1.0: %v", r.kind, r.name, got.Tags)
		}
	}
	checkReady(t, api, len(fluxHelmResources))
}

// run is what GET /api/v1/runs says of a run.
type run struct {
	ID         uint64         `json:"id"`
	Revision   string         `json:"revision"`
	Trigger    string         `json:"trigger"`
	Outcome    string         `json:"outcome"`
	Summary    string         `json:"summary"`
	Error      string         `json:"error"`
	Counts     map[string]int `json:"counts"`
	FinishedAt string         `json:"finishedAt"`
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, b)
	}
	return json.Unmarshal(b, v)
}

// runsOf returns the runs the API lists, oldest first.
func runsOf(api string) ([]run, error) {
	var body struct {
		Items []run `json:"items"`
	}
	if err := getJSON(api+"runs", &body); err != nil {
		return nil, err
	}
	runs := body.Items
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs, nil
}

// waitRunsFor waits until a run the API lists satisfies ok and returns the runs, oldest first, up to the
// newest that does.
func waitRunsFor(api string, timeout time.Duration, ok func(run) bool) ([]run, bool) {
	deadline := time.Now().Add(timeout)
	var runs []run
	for time.Now().Before(deadline) {
		if r, err := runsOf(api); err == nil {
			runs = r
			for i := len(runs) - 1; i >= 0; i-- {
				if ok(runs[i]) {
					return runs[:i+1], true
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return runs, false
}

// waitRun waits for a finished run that satisfies ok, failing the test when the server stops or none comes.
func waitRun(t *testing.T, api string, served <-chan error, stderr *syncBuffer, ok func(run) bool) run {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-served:
			t.Fatalf("gitaso serve stopped: %v\n%s", err, stderr.String())
		default:
		}
		if runs, err := runsOf(api); err == nil {
			for _, r := range runs {
				if r.FinishedAt != "" && ok(r) {
					return r
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("gitaso serve: no such run in 60 s\n%s", stderr.String())
	return run{}
}

// checkReady checks, through the API, that n resources are known and all Ready.
func checkReady(t *testing.T, api string, n int) {
	t.Helper()
	var body struct {
		Items []struct {
			Namespace string                                   `json:"namespace"`
			Kind      string                                   `json:"kind"`
			Name      string                                   `json:"name"`
			Ready     struct{ Status, Reason, Message string } `json:"ready"`
		} `json:"items"`
	}
	if err := getJSON(api+"resources", &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Items) != n {
		t.Errorf("the API lists %d resources, want %d", len(body.Items), n)
	}
	for _, r := range body.Items {
		if r.Ready.Status != "True" {
			t.Errorf("%s/%s/%s is not Ready: %+v", r.Namespace, r.Kind, r.Name, r.Ready)
		}
	}
}

// registryCalls counts the successful requests to path of the emulated registry made by a principal.
func registryCalls(e *emulator.Emulator, path, principal string) int {
	n := 0
	for _, l := range e.RequestLog() {
		if l.Type == "registry" && l.Path == path && l.Status == http.StatusOK && strings.EqualFold(l.Principal, principal) {
			n++
		}
	}
	return n
}

// registryLog lists the emulated registry's requests, for failure messages.
func registryLog(e *emulator.Emulator) string {
	var b strings.Builder
	for _, l := range e.RequestLog() {
		if l.Type == "registry" {
			fmt.Fprintf(&b, "  %s %s %d %s %s\n", l.Method, l.Path, l.Status, l.Code, l.Principal)
		}
	}
	return b.String()
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
