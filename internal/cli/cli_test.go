package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/cli"
	"github.com/gitaso/gitaso/state"
)

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := cli.Run(context.Background(), args, &out, &errb)
	return out.String(), errb.String(), err
}

func exitCode(err error) int {
	var ee *cli.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	return 1
}

func TestValidateExamples(t *testing.T) {
	out, stderr, err := run(t, "validate", "--dir", "../../examples/onboarding")
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "18 resources valid") {
		t.Errorf("output %q", out)
	}
}

// The onboarding from one commit: team-a's objects wait for the clientId the
// identity exports, so they are known after apply rather than an error.
func TestValidateKnownAfterApply(t *testing.T) {
	out, stderr, err := run(t, "validate", "--dir", "../../examples/onboarding", "--substitute-from", "platform/platform-vars",
		"--substitute-from", "ConfigMap/platform/team-a-vars", "--substitute-strict")
	if err != nil {
		t.Fatalf("validate: %v\n%s", err, stderr)
	}
	if !strings.Contains(out, "11 resources valid") || !strings.Contains(out, "7 known after apply") {
		t.Errorf("output %q", out)
	}
	_, stderr, err = run(t, "validate", "--dir", "../../examples/onboarding", "--substitute-from", "platform/platform-vars",
		"--substitute-from", "ConfigMap/platform/nobody-exports-this", "--substitute-strict")
	if exitCode(err) != 1 || !strings.Contains(stderr, "no ConfigMap platform/nobody-exports-this in the files read (below the source path), among the values gitaso's resources exported, or among those the revision's resources export (operatorSpec)") {
		t.Errorf("a source nobody exports: exit %d, stderr %q", exitCode(err), stderr)
	}
}

func TestValidateReportsEveryError(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", "apiVersion: storage.azure.com/v1api20230101\nkind: StorageAcount\nmetadata:\n  name: x\n  namespace: n\nspec: {}\n")
	write(t, dir, "b.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: n\nspec:\n  locaton: westeurope\n")
	_, stderr, err := run(t, "validate", "--dir", dir)
	if exitCode(err) != 1 {
		t.Fatalf("exit code %d (%v), want 1", exitCode(err), err)
	}
	for _, want := range []string{
		`a.yaml:2: n/StorageAcount/x: kind: unknown ASO kind`,
		`StorageAccount`,
		`b.yaml:7: n/ResourceGroup/rg: spec.locaton: unknown field "locaton"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

// validate reports everything in one pass: a file that is not YAML and an
// unset variable under --substitute-strict do not hide the other files'
// errors; each error is at its field's line; a missing owner is one error,
// not one more per resource below it; an owner in another namespace (where a
// manifest without metadata.namespace lands) is named.
func TestValidateOnePass(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: id1
  namespace: my-app
spec:
  location: ${LOC}
  owner:
    name: rg
  tags:
    team: ${TEAM}
`)
	write(t, dir, "b.yaml", `apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: sa
  namespace: my-app
spec:
  location: westeurope
  kindd: StorageV2
  sku:
    name: Standard_LRS
  owner:
    name: rg2
`)
	write(t, dir, "c.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: [\n")
	write(t, dir, "d.yaml", `apiVersion: network.azure.com/v1api20201101
kind: VirtualNetwork
metadata:
  name: vnet
  namespace: my-app
spec:
  location: westeurope
  owner:
    name: rgx
---
apiVersion: network.azure.com/v1api20201101
kind: VirtualNetworksSubnet
metadata:
  name: sn
  namespace: my-app
spec:
  owner:
    name: vnet
  addressPrefix: 10.0.0.0/24
`)
	out, stderr, err := run(t, "validate", "--dir", dir, "--substitute-strict")
	if exitCode(err) != 1 {
		t.Fatalf("exit code %d (%v), want 1\n%s%s", exitCode(err), err, out, stderr)
	}
	want := []string{
		`a.yaml:14: my-app/UserAssignedIdentity/id1: ${LOC}: variable is not set`,
		`a.yaml:16: my-app/UserAssignedIdentity/id1: spec.owner.name: owner ResourceGroup "rg" not found in namespace "my-app"; ResourceGroup "rg" is declared in namespace "default": a.yaml:1 has no metadata.namespace`,
		`a.yaml:18: my-app/UserAssignedIdentity/id1: ${TEAM}: variable is not set`,
		`b.yaml:6: my-app/StorageAccount/sa: spec.kind: required field is missing`,
		`b.yaml:8: my-app/StorageAccount/sa: spec.kindd: unknown field "kindd": did you mean "kind"?`,
		`b.yaml:12: my-app/StorageAccount/sa: spec.owner.name: owner ResourceGroup "rg2" not found in namespace "my-app" (or in c.yaml, which could not be read)`,
		`c.yaml:5: invalid YAML`,
		`d.yaml:9: my-app/VirtualNetwork/vnet: spec.owner.name: owner ResourceGroup "rgx" not found`,
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != len(want) {
		t.Errorf("%d lines, want %d errors and the count:\n%s", len(lines), len(want), stderr)
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if strings.Contains(stderr, "sn") || strings.Contains(stderr, "applied") {
		t.Errorf("the subnet's owner error is reported twice, or validate speaks of applying:\n%s", stderr)
	}
	if err.Error() != "8 errors" {
		t.Errorf("summary %q, want %q", err.Error(), "8 errors")
	}
}

func TestOfflinePlanJSONAndExitCode(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: n\nspec:\n  location: westeurope\n")
	out, stderr, err := run(t, "plan", "--offline", "--subscription", "22222222-2222-2222-2222-222222222222", "--dir", dir, "-o", "json")
	if exitCode(err) != 2 {
		t.Fatalf("exit code %d (%v), want 2 (changes pending)\n%s", exitCode(err), err, stderr)
	}
	var p struct {
		Revision  string
		Resources []struct {
			Namespace, Kind, Name, Action, ArmID string
			Request                              struct{ Method, Path string }
		}
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("plan JSON: %v\n%s", err, out)
	}
	if len(p.Resources) != 1 {
		t.Fatalf("resources %+v", p.Resources)
	}
	r := p.Resources[0]
	if r.Action != "create" || r.Request.Method != "PUT" ||
		r.Request.Path != "/subscriptions/22222222-2222-2222-2222-222222222222/resourceGroups/rg?api-version=2020-06-01" {
		t.Errorf("plan entry %+v", r)
	}
}

func TestSettingsFromEnvAndConfigFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "manifests/rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: n\nspec:\n  location: westeurope\n")
	cfg := filepath.Join(dir, "gitaso.yaml")
	write(t, dir, "gitaso.yaml", "dir: "+filepath.Join(dir, "manifests")+"\nsubscription: 33333333-3333-3333-3333-333333333333\n")
	t.Setenv("GITASO_OUTPUT", "json")
	out, stderr, err := run(t, "plan", "--offline", "--config", cfg)
	if exitCode(err) != 2 {
		t.Fatalf("exit %d: %v\n%s", exitCode(err), err, stderr)
	}
	if !strings.Contains(out, `"/subscriptions/33333333-3333-3333-3333-333333333333/resourceGroups/rg?api-version=2020-06-01"`) {
		t.Errorf("config file or env not applied:\n%s", out)
	}
	write(t, dir, "bad.yaml", "nope: 1\n")
	if _, _, err := run(t, "plan", "--offline", "--config", filepath.Join(dir, "bad.yaml")); err == nil || !strings.Contains(err.Error(), `unknown setting "nope"`) {
		t.Errorf("unknown config key: %v", err)
	}
}

func TestHelpTeaches(t *testing.T) {
	out, _, err := run(t, "plan", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--offline", "Exit codes", "terraform plan", "--config", "known after apply"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan --help lacks %q", want)
		}
	}
}

func write(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSubstituteFromConfigMap(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "vars.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: platform-vars\n  namespace: platform\ndata:\n  RG: team-a-rg\n  LOCATION: uksouth\n")
	write(t, dir, "rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: ${RG}\n  namespace: platform\nspec:\n  location: ${LOCATION}\n  tags:\n    env: ${ENV:=snd}\n")
	out, stderr, err := run(t, "plan", "--offline", "--dir", dir, "-o", "json", "--substitute-from", "platform/platform-vars")
	if exitCode(err) != 2 {
		t.Fatalf("exit %d: %v\n%s", exitCode(err), err, stderr)
	}
	for _, want := range []string{`/resourceGroups/team-a-rg?api-version=2020-06-01`, `"location": "uksouth"`, `"env": "snd"`} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %s:\n%s", want, out)
		}
	}
	// Strict: an unset variable is an error naming file, line and variable.
	write(t, dir, "extra.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: other\n  namespace: platform\nspec:\n  location: ${MISSING}\n")
	_, stderr, err = run(t, "validate", "--dir", dir, "--substitute-from", "platform/platform-vars", "--substitute-strict")
	if exitCode(err) != 1 || !strings.Contains(stderr, "extra.yaml:") || !strings.Contains(stderr, "MISSING") {
		t.Errorf("strict substitution: exit %d\n%s", exitCode(err), stderr)
	}
}

func TestASOEnvironmentCarriesOver(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: n\nspec:\n  location: westeurope\n")
	t.Setenv("DEFAULT_RECONCILE_POLICY", "skip")
	out, _, err := run(t, "plan", "--offline", "--dir", dir, "-o", "json")
	if exitCode(err) != 0 || !strings.Contains(out, `"action": "observe"`) || !strings.Contains(out, `"policy": "skip"`) {
		t.Errorf("DEFAULT_RECONCILE_POLICY=skip not applied (exit %d):\n%s", exitCode(err), out)
	}
	t.Setenv("GITASO_DEFAULT_RECONCILE_POLICY", "manage")
	out, _, _ = run(t, "plan", "--offline", "--dir", dir, "-o", "json")
	if !strings.Contains(out, `"action": "create"`) {
		t.Errorf("GITASO_DEFAULT_RECONCILE_POLICY must win over ASO's variable:\n%s", out)
	}
}

// Values with commas reach the renderer whole, from flags, the environment
// (one value per line) and the config file alike: --substitute X=a,b and
// --substitute-from NS/NAME,optional.
func TestSubstituteValuesKeepCommas(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: platform\nspec:\n  location: westeurope\n  tags:\n    owners: ${OWNERS}\n")
	check := func(name string, args ...string) {
		t.Helper()
		out, stderr, err := run(t, append([]string{"plan", "--offline", "--dir", dir, "-o", "json", "--substitute-strict"}, args...)...)
		if exitCode(err) != 2 {
			t.Fatalf("%s: exit %d: %v\n%s", name, exitCode(err), err, stderr)
		}
		if !strings.Contains(out, `"owners": "alice,bob"`) {
			t.Errorf("%s: plan lacks the whole value:\n%s", name, out)
		}
	}
	// An optional source that does not exist is no error.
	check("flags", "--substitute", "OWNERS=alice,bob", "--substitute-from", "platform/missing-vars,optional")
	t.Run("env", func(t *testing.T) {
		t.Setenv("GITASO_SUBSTITUTE", "OWNERS=alice,bob\nOTHER=x")
		t.Setenv("GITASO_SUBSTITUTE_FROM", "platform/missing-vars,optional")
		check("env")
	})
	cfg := filepath.Join(t.TempDir(), "config.yaml")
	write(t, filepath.Dir(cfg), "config.yaml", "substitute:\n  - OWNERS=alice,bob\nsubstitute-from:\n  - platform/missing-vars,optional\n")
	check("config", "--config", cfg)
}

// An offline plan with no subscription given plans in the one the
// manifests' ARM IDs name, never mixing the zero subscription with it.
func TestOfflinePlanTakesTheManifestsSubscription(t *testing.T) {
	dir := t.TempDir()
	sub := "5b4e6ad4-0000-4000-8000-00000000e002"
	t.Setenv("AZURE_SUBSCRIPTION_ID", "")
	for _, ns := range []string{"platform", "team-a"} {
		files, err := filepath.Glob(filepath.Join("../../examples/onboarding", ns, "*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("examples: %v", err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			text := string(b)
			if filepath.Base(f) == "platform-vars.yaml" {
				text = strings.Replace(text, `SUBSCRIPTION_ID: "00000000-0000-0000-0000-000000000000"`, `SUBSCRIPTION_ID: "`+sub+`"`, 1)
				if !strings.Contains(text, sub) {
					t.Fatal("platform-vars.yaml: SUBSCRIPTION_ID not found")
				}
			}
			write(t, dir, filepath.Join(ns, filepath.Base(f)), text)
		}
	}
	out, stderr, err := run(t, "plan", "--offline", "--dir", dir, "-o", "json",
		"--substitute-from", "platform/platform-vars", "--substitute-from", "ConfigMap/platform/team-a-vars")
	if exitCode(err) != 2 {
		t.Fatalf("exit %d (%v)\n%s", exitCode(err), err, stderr)
	}
	if n := strings.Count(out, "/subscriptions/"+sub); n == 0 || strings.Contains(out, "/subscriptions/00000000-0000-0000-0000-000000000000") {
		t.Errorf("%d ARM IDs in %s, and the zero subscription is there too:\n%s", n, sub, out)
	}
}

// With --flux too: an unset variable of a Kustomization's postBuild fails
// that Kustomization (its objects are not checked: they are not applied)
// and does not hide the other Kustomizations' errors, which point at the
// lines of the files they build; validate reports them together.
func TestValidateFluxOnePass(t *testing.T) {
	dir := t.TempDir()
	kustomization := func(name string) string {
		return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: flux-system
spec:
  path: ./` + name + `
  sourceRef:
    kind: GitRepository
    name: flux-system
  postBuild:
    substitute:
      LOC: westeurope
`
	}
	write(t, dir, "clusters/apps.yaml", kustomization("apps")+"---\n"+kustomization("data"))
	write(t, dir, "apps/rg.yaml", `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
  namespace: my-app
spec:
  location: ${LOC}
  tags:
    team: ${TEAM}
`)
	write(t, dir, "data/sa.yaml", `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg-data
  namespace: my-app
spec:
  location: ${LOC}
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: sa
  namespace: my-app
spec:
  location: ${LOC}
  kindd: StorageV2
  sku:
    name: Standard_LRS
  owner:
    name: rg-data
`)
	_, stderr, err := run(t, "validate", "--dir", dir, "--path", "clusters", "--flux", "--substitute-strict")
	if exitCode(err) != 1 || err.Error() != "3 errors" {
		t.Fatalf("exit %d, %v\n%s", exitCode(err), err, stderr)
	}
	for _, want := range []string{
		`apps/rg.yaml:1: my-app/ResourceGroup/rg: ${TEAM} (postBuild of Flux Kustomization flux-system/apps): variable is not set`,
		`data/sa.yaml:14: my-app/StorageAccount/sa: spec.kind: required field is missing`,
		`data/sa.yaml:16: my-app/StorageAccount/sa: spec.kindd: unknown field "kindd"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestStateCompact(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "s.db")
	db, err := state.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, stderr, err := run(t, "state", "compact", "--state", file)
	if err != nil || !strings.Contains(out, file+": ") || !strings.Contains(out, "MB →") {
		t.Fatalf("state compact: %v %q %s", err, out, stderr)
	}
}

// A plan whose Flux Kustomization fails to render plans the others and
// exits with ExitPartial, naming the failed unit; the plan says partial.
func TestPlanPartialExitCode(t *testing.T) {
	dir := t.TempDir()
	ks := func(name, path string) string {
		return "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: " + name +
			"\n  namespace: flux-system\nspec:\n  path: " + path + "\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n"
	}
	write(t, dir, "clusters/teams.yaml", ks("team-a", "./a")+"---\n"+ks("team-b", "./b-not-yet"))
	write(t, dir, "a/rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-a\n  namespace: team-a\nspec:\n  location: westeurope\n")
	out, stderr, err := run(t, "plan", "--offline", "--subscription", "22222222-2222-2222-2222-222222222222", "--dir", dir, "--path", "clusters", "--flux")
	if exitCode(err) != cli.ExitPartial {
		t.Fatalf("exit %d (%v), want %d\n%s\n%s", exitCode(err), err, cli.ExitPartial, out, stderr)
	}
	if !strings.Contains(err.Error(), "Kustomization/flux-system/team-b (ArtifactFailed)") {
		t.Errorf("error %q does not name the failed unit", err)
	}
	if !strings.Contains(out, "rg-a") || !strings.Contains(out, "Partial: 1 of 2 units failed") {
		t.Errorf("the plan lacks team-a's resource group or the partial line:\n%s", out)
	}
}
