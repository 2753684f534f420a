package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// where lists "file:line#index ID" of objects, to compare with go-cmp.
func where(objs []manifest.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, fmt.Sprintf("%s:%d#%d %s", o.File, o.Line, o.Index, o.ID()))
	}
	return out
}

func fetch(t *testing.T, root, path string, opts Options) (*manifest.Snapshot, error) {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return source.NewDir(root, path, source.WithRenderer(r)).Fetch(context.Background())
}

func errorLines(err error) []string {
	var out []string
	for _, e := range diag.AsList(err).Sorted() {
		out = append(out, e.Error())
	}
	return out
}

func find(t *testing.T, snap *manifest.Snapshot, id string) manifest.Object {
	t.Helper()
	for _, o := range snap.Objects {
		if o.ID() == id {
			return o
		}
	}
	t.Fatalf("no object %s in %v", id, where(snap.Objects))
	return manifest.Object{}
}

// The seeds' onboarding: variables from the platform-vars ConfigMap (and a
// Secret), inline variables overriding them, a default, an object that
// turns substitution off.
func TestOnboardingFromConfigMap(t *testing.T) {
	cm, _ := ParseRef("ConfigMap/config-cluster-flux/platform-vars")
	sec, _ := ParseRef("config-cluster-flux/team-vars")
	snap, err := fetch(t, "testdata", "onboarding", Options{
		Substitute:     true,
		Strict:         true,
		SubstituteFrom: []Ref{cm, sec},
		Vars:           map[string]string{"ENVIRONMENT": "snd-override"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"onboarding/config/platform-vars.yaml:3#0 config-cluster-flux/ConfigMap/platform-vars",
		"onboarding/config/platform-vars.yaml:16#1 config-cluster-flux/Secret/team-vars",
		"onboarding/platform/identity.yaml:2#0 platform/UserAssignedIdentity/team-a-identity",
		"onboarding/platform/identity.yaml:15#1 platform/FederatedIdentityCredential/team-a-identity-fic",
		"onboarding/team-a/aso-credential.yaml:1#0 team-a/Secret/aso-credential",
		"onboarding/team-a/aso-credential.yaml:14#1 team-a/ConfigMap/raw-template",
	}
	if diff := cmp.Diff(want, where(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	wantSpec := map[string]any{
		"azureName": "sndadpinfmid1401-team-a",
		"location":  "uksouth",
		"owner":     map[string]any{"armId": "/subscriptions/55f3b8c6-6800-41c7-a40d-2adb5e4e1bd1/resourceGroups/sndadpinfrg1401"},
		"tags":      map[string]any{"environment": "snd-override"},
	}
	if diff := cmp.Diff(wantSpec, find(t, snap, "platform/UserAssignedIdentity/team-a-identity").Spec()); diff != "" {
		t.Errorf("identity spec (-want +got):\n%s", diff)
	}
	fic := find(t, snap, "platform/FederatedIdentityCredential/team-a-identity-fic").Spec()
	if got := fic["issuer"]; got != "https://uksouth.oic.prod-aks.azure.com/6f504113-6b64-43f2-ade9-242e05780007/e1f44edd-ac8e-4e4d-928a-2d2a7a52d4b7/" {
		t.Errorf("issuer = %v", got)
	}
	data, err := manifest.SecretData(find(t, snap, "team-a/Secret/aso-credential"))
	if err != nil {
		t.Fatal(err)
	}
	wantData := map[string]string{
		"AZURE_SUBSCRIPTION_ID":      "55f3b8c6-6800-41c7-a40d-2adb5e4e1bd1",
		"AZURE_TENANT_ID":            "6f504113-6b64-43f2-ade9-242e05780007",
		"AZURE_CLIENT_ID":            "0b7f5a3e-1111-4222-8333-944455556666", // decoded from the Secret
		"USE_WORKLOAD_IDENTITY_AUTH": "true",
	}
	if diff := cmp.Diff(wantData, data); diff != "" {
		t.Errorf("credential (-want +got):\n%s", diff)
	}
	raw, _ := manifest.ConfigMapData(find(t, snap, "team-a/ConfigMap/raw-template"))
	if raw["issuer"] != "${CLUSTER_OIDC}" {
		t.Errorf("substitution ran on an object that disables it: issuer = %q", raw["issuer"])
	}
}

// Without the Secret, strict mode names the file, line, object and variable;
// without strict, the variable is empty.
func TestOnboardingStrictAndLax(t *testing.T) {
	cm, _ := ParseRef("config-cluster-flux/platform-vars")
	_, err := fetch(t, "testdata", "onboarding", Options{Substitute: true, Strict: true, SubstituteFrom: []Ref{cm}})
	want := []string{"onboarding/team-a/aso-credential.yaml:10: team-a/Secret/aso-credential: ${TEAM_MI_CLIENT_ID}: " +
		"variable is not set and has no default (strict substitution; set TEAM_MI_CLIENT_ID with --substitute TEAM_MI_CLIENT_ID=... or in a --substitute-from ConfigMap or Secret, or write ${TEAM_MI_CLIENT_ID:=default}; $${TEAM_MI_CLIENT_ID} is a literal)"}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if l := diag.AsList(err); len(l) != 1 || !errors.Is(l[0], ErrUnsetVariable) {
		t.Errorf("errors.Is(error, ErrUnsetVariable) = false")
	}
	snap, err := fetch(t, "testdata", "onboarding", Options{Substitute: true, SubstituteFrom: []Ref{cm}})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := manifest.SecretData(find(t, snap, "team-a/Secret/aso-credential"))
	if v, ok := data["AZURE_CLIENT_ID"]; !ok || v != "" {
		t.Errorf("AZURE_CLIENT_ID = %q, %v; want empty", v, ok)
	}
}

// Substitution off (the default): files are parsed as written.
func TestNoSubstitution(t *testing.T) {
	snap, err := fetch(t, "testdata", "onboarding", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	if got := find(t, snap, "platform/UserAssignedIdentity/team-a-identity").Spec()["azureName"]; got != "${TEAM_MI_PREFIX}-team-a" {
		t.Errorf("azureName = %v", got)
	}
}

func TestVariableSourceErrors(t *testing.T) {
	files := []source.File{
		{Path: "vars.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: v, namespace: p}\ndata:\n  GOOD: x\n  bad.key: y\n" +
			"---\napiVersion: v1\nkind: Secret\nmetadata: {name: v, namespace: p}\nstringData: {A: b}\n")},
		{Path: "rg.yaml", Data: []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg}\nspec: {location: x}\n")},
	}
	tests := []struct {
		name string
		refs []string
		want []string
	}{
		{"missing", []string{"p/nope"}, []string{"p/nope: substitute-from p/nope: no ConfigMap or Secret p/nope in the files read (below the source path); add ',optional' if it may be absent"}},
		{"missing kind", []string{"Secret/default/rg"}, []string{"default/rg: substitute-from Secret/default/rg: no Secret default/rg in the files read (below the source path); add ',optional' if it may be absent"}},
		{"optional", []string{"p/nope,optional"}, nil},
		{"ambiguous", []string{"p/v"}, []string{"vars.yaml:1: p/ConfigMap/v: substitute-from p/v: both a ConfigMap and a Secret are named p/v (also at vars.yaml:8); write ConfigMap/p/v or Secret/p/v"}},
		{"invalid key", []string{"ConfigMap/p/v"}, []string{`vars.yaml:1: p/ConfigMap/v: data.bad.key: substitute-from ConfigMap/p/v: "bad.key" is not a valid variable name (letters, digits and '_', not starting with a digit; Flux refuses it too)`}},
		{"secret", []string{"Secret/p/v"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var refs []Ref
			for _, s := range tt.refs {
				r, err := ParseRef(s)
				if err != nil {
					t.Fatal(err)
				}
				refs = append(refs, r)
			}
			r, err := New(Options{Substitute: true, SubstituteFrom: refs})
			if err != nil {
				t.Fatal(err)
			}
			_, err = r.Render(context.Background(), files)
			if diff := cmp.Diff(tt.want, errorLines(err)); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNewRefusesBadVariableNames(t *testing.T) {
	if _, err := New(Options{Substitute: true, Vars: map[string]string{"A-B": "x"}}); err == nil {
		t.Error("New accepted the variable name A-B")
	}
}

// Every error of every file comes back together, and a file's lines stay
// true after substitution in earlier documents.
func TestRenderCollectsSubstitutionErrors(t *testing.T) {
	files := []source.File{
		{Path: "a.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: \"${A}\"}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata:\n  y: \"${B\"\n")},
		{Path: "b.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: n}\ndata: {z: \"${C}\"}\n")},
	}
	r, err := New(Options{Substitute: true, Strict: true, Vars: map[string]string{"A": "a\nvalue"}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = source.Build(context.Background(), "rev", files, r)
	want := []string{
		`a.yaml:10: default/ConfigMap/b: ${B": bad substitution: missing closing brace (write $${ for a literal ${)`,
		"b.yaml:4: n/ConfigMap/c: ${C}: variable is not set and has no default (strict substitution; set C with --substitute C=... or in a --substitute-from ConfigMap or Secret, or write ${C:=default}; $${C} is a literal)",
	}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// The newline of A's value is removed (as Flux does), so lines stay true.
	ok := []source.File{{Path: "c.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {x: \"${A}\"}\n")}}
	out, err := r.Render(context.Background(), ok)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(out[0].Data); !strings.Contains(got, `x: "avalue"`) {
		t.Errorf("rendered %q", got)
	}
}

// With kustomize off, a kustomization file is neither built nor substituted
// (strict mode does not trip on its inline patches).
func TestKustomizeOffSkipsKustomizationFiles(t *testing.T) {
	files := []source.File{
		{Path: "app/kustomization.yaml", Data: []byte("resources: [rg.yaml]\npatches:\n  - patch: |\n      - {op: add, path: /spec/x, value: ${UNSET}}\n")},
		{Path: "app/rg.yaml", Data: []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg}\nspec: {location: ${LOC}}\n")},
	}
	r, err := New(Options{Substitute: true, Strict: true, Vars: map[string]string{"LOC": "uksouth"}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := source.Build(context.Background(), "rev", files, r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"app/rg.yaml:1#0 default/ResourceGroup/rg"}, where(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if got := snap.Objects[0].Spec()["location"]; got != "uksouth" {
		t.Errorf("location = %v", got)
	}
}
