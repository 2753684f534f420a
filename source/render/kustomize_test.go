package render

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/source"
)

// An overlay (namespace, commonLabels, a strategic-merge patch file, an
// inline JSON patch) over a base outside the overlay, then substitution of
// the build output with variables from a ConfigMap the overlay itself adds.
func TestKustomizeOverlay(t *testing.T) {
	var logs strings.Builder
	vars, _ := ParseRef("app-prod/app-vars")
	snap, err := fetch(t, "testdata/kustomize", "deploy", Options{
		Kustomize:      true,
		KustomizeDirs:  []string{"deploy/overlays/prod"},
		Substitute:     true,
		Strict:         true,
		SubstituteFrom: []Ref{vars},
		Logger:         slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// kustomize build's (legacy) order: ConfigMaps first, then by kind and name;
		// each object names the file and line it came from
		"deploy/overlays/prod/vars.yaml:1#0 app-prod/ConfigMap/app-vars",
		"deploy/base/resource-group.yaml:1#1 app-prod/ResourceGroup/app-rg",
		"deploy/base/storage.yaml:1#2 app-prod/StorageAccount/appstorage",
	}
	if diff := cmp.Diff(want, where(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	// commonLabels is deprecated: the warning goes to the logger, not to stderr.
	if got := logs.String(); !strings.Contains(got, `level=WARN msg="deprecated kustomization field" file=deploy/overlays/prod/kustomization.yaml warning="'commonLabels' is deprecated.`) {
		t.Errorf("log: %s", got)
	}
	wantRG := map[string]any{
		"apiVersion": "resources.azure.com/v1api20200601",
		"kind":       "ResourceGroup",
		"metadata":   map[string]any{"name": "app-rg", "namespace": "app-prod", "labels": map[string]any{"environment": "prod"}},
		"spec":       map[string]any{"location": "uksouth"}, // the inline patch's ${LOCATION:=uksouth}, substituted after the build
	}
	if diff := cmp.Diff(wantRG, snap.Objects[1].Content); diff != "" {
		t.Errorf("resource group (-want +got):\n%s", diff)
	}
	wantSA := map[string]any{
		"apiVersion": "storage.azure.com/v1api20230101",
		"kind":       "StorageAccount",
		"metadata":   map[string]any{"name": "appstorage", "namespace": "app-prod", "labels": map[string]any{"environment": "prod"}},
		"spec": map[string]any{
			"azureName": "contosoprod",
			"kind":      "StorageV2",
			"location":  "westeurope",
			"owner":     map[string]any{"name": "app-rg"},
			"sku":       map[string]any{"name": "Standard_GRS"},
		},
	}
	if diff := cmp.Diff(wantSA, snap.Objects[2].Content); diff != "" {
		t.Errorf("storage account (-want +got):\n%s", diff)
	}
}

// Without KustomizeDirs every topmost kustomization is built (as Flux's
// generated kustomization does); a directory without one is read as is.
func TestKustomizeAutoRoots(t *testing.T) {
	snap, err := fetch(t, "testdata/kustomize", "", DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"deploy/base/resource-group.yaml:1#0 default/ResourceGroup/app-rg",
		"deploy/base/storage.yaml:1#1 default/StorageAccount/appstorage",
		"deploy/base/resource-group.yaml:1#0 app-dev/ResourceGroup/app-rg",
		"deploy/base/storage.yaml:1#1 app-dev/StorageAccount/appstorage",
		// prod without substitution: its inline patch value stays a literal
		"deploy/overlays/prod/vars.yaml:1#0 app-prod/ConfigMap/app-vars",
		"deploy/base/resource-group.yaml:1#1 app-prod/ResourceGroup/app-rg",
		"deploy/base/storage.yaml:1#2 app-prod/StorageAccount/appstorage",
		"plain/rg.yaml:1#0 plain/ResourceGroup/plain-rg",
	}
	if diff := cmp.Diff(want, where(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if got := snap.Objects[5].Spec()["location"]; got != "${LOCATION:=uksouth}" {
		t.Errorf("location = %v", got)
	}
	// With kustomize off, the raw files are parsed (and collide).
	_, err = fetch(t, "testdata/kustomize", "deploy", Options{})
	if l := diag.AsList(err); len(l) != 1 || l[0].Msg != "defined twice (also at deploy/base/storage.yaml:1)" {
		t.Errorf("kustomize off: %v", err)
	}
}

func TestKustomizeErrors(t *testing.T) {
	rg := []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg}\nspec: {location: x}\n")
	k := func(body string) []byte {
		return []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" + body)
	}
	tests := []struct {
		name  string
		files []source.File
		dirs  []string
		want  []string
		line  string // the first error begins with it
		is    error
	}{
		{
			name: "remote bases refused up front",
			files: []source.File{
				{Path: "app/kustomization.yaml", Data: k("resources:\n  - rg.yaml\n  - github.com/org/repo//deploy?ref=v1.0.0\n  - https://example.com/x.yaml\n" +
					"components:\n  - git@github.com:org/repo.git\n")},
				{Path: "app/rg.yaml", Data: rg},
			},
			want: []string{
				`app/kustomization.yaml:5: resources[1]: "github.com/org/repo//deploy?ref=v1.0.0": gitaso builds kustomizations offline from the repository; vendor the base into the repository (below the source path) and refer to it by a relative path: remote kustomize bases are not supported`,
				`app/kustomization.yaml:6: resources[2]: "https://example.com/x.yaml": gitaso builds kustomizations offline from the repository; vendor the base into the repository (below the source path) and refer to it by a relative path: remote kustomize bases are not supported`,
				`app/kustomization.yaml:8: components[0]: "git@github.com:org/repo.git": gitaso builds kustomizations offline from the repository; vendor the base into the repository (below the source path) and refer to it by a relative path: remote kustomize bases are not supported`,
			},
			is: ErrRemoteBase,
		},
		{
			name: "remote base in a nested local base",
			files: []source.File{
				{Path: "app/kustomization.yaml", Data: k("resources:\n  - ../base\n")},
				{Path: "base/kustomization.yaml", Data: k("bases:\n  - ssh://git@example.com/repo.git\n")},
			},
			dirs: []string{"app"},
			want: []string{
				`base/kustomization.yaml:4: bases[0]: "ssh://git@example.com/repo.git": gitaso builds kustomizations offline from the repository; vendor the base into the repository (below the source path) and refer to it by a relative path: remote kustomize bases are not supported`,
			},
			is: ErrRemoteBase,
		},
		{
			name: "base not below the source path",
			files: []source.File{
				{Path: "clusters/prod/kustomization.yaml", Data: k("resources:\n  - ../../base\n  - ../../../outside\n")},
			},
			want: []string{
				`clusters/prod/kustomization.yaml:4: resources[0]: "../../base" does not exist among the files gitaso reads (only *.yaml/*.yml files below the source path; point the source path at a directory that holds the base too)`,
				`clusters/prod/kustomization.yaml:5: resources[1]: "../../../outside" is outside the repository`,
			},
		},
		{
			name: "kustomize's own error",
			files: []source.File{
				{Path: "app/kustomization.yaml", Data: k("resources:\n  - rg.yaml\npatches:\n  - path: missing-patch.yaml\n")},
				{Path: "app/rg.yaml", Data: rg},
			},
			is: ErrKustomizeBuild,
		},
		{
			name: "a patch that matches nothing after a rename, blamed on the entry listing it",
			files: []source.File{
				{Path: "app/kustomization.yaml", Data: k("resources:\n  - ../base\n")},
				{Path: "base/kustomization.yaml", Data: k("resources:\n  - rg.yaml\npatches:\n  - path: tags.yaml\n  - path: old.yaml\n")},
				{Path: "base/rg.yaml", Data: rg},
				{Path: "base/tags.yaml", Data: []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg}\nspec: {tags: {a: b}}\n")},
				{Path: "base/old.yaml", Data: []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: rg-old}\nspec: {tags: {a: b}}\n")},
			},
			dirs: []string{"app"},
			line: "base/kustomization.yaml:7: ",
			is:   ErrKustomizeBuild,
		},
		{
			name: "an inline patch that matches nothing",
			files: []source.File{
				{Path: "app/kustomization.yaml", Data: k("resources:\n  - rg.yaml\npatches:\n  - patch: |-\n      apiVersion: resources.azure.com/v1api20200601\n      kind: ResourceGroup\n      metadata:\n        name: rg-old\n")},
				{Path: "app/rg.yaml", Data: rg},
			},
			dirs: []string{"app"},
			line: "app/kustomization.yaml:6: ",
			is:   ErrKustomizeBuild,
		},
		{
			name:  "directory without a kustomization",
			files: []source.File{{Path: "app/rg.yaml", Data: rg}},
			dirs:  []string{"app"},
			want:  []string{"app: kustomize directory: no kustomization.yaml there among the files read (the directory is relative to the repository root and must be below the source path)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(Options{Kustomize: true, KustomizeDirs: tt.dirs})
			if err != nil {
				t.Fatal(err)
			}
			_, err = source.Build(context.Background(), "rev", tt.files, r)
			if err == nil {
				t.Fatal("no error")
			}
			if tt.want != nil {
				if diff := cmp.Diff(tt.want, errorLines(err)); diff != "" {
					t.Errorf("errors (-want +got):\n%s", diff)
				}
			}
			if got := errorLines(err); tt.line != "" && (len(got) == 0 || !strings.HasPrefix(got[0], tt.line)) {
				t.Errorf("errors %q, want the first to begin with %q", got, tt.line)
			}
			if tt.is != nil {
				for _, e := range diag.AsList(err) {
					if !errors.Is(e, tt.is) {
						t.Errorf("%v: errors.Is(%v) = false", e, tt.is)
					}
				}
			}
			if len(diag.AsList(err)) == 0 {
				t.Errorf("not a diag error: %v", err)
			}
		})
	}
}

// A substitution error in kustomize output names the kustomization and the
// object (lines of generated text point nowhere).
func TestKustomizeSubstitutionError(t *testing.T) {
	snap, err := fetch(t, "testdata/kustomize", "deploy", Options{
		Kustomize: true, KustomizeDirs: []string{"deploy/overlays/prod"}, Substitute: true, Strict: true,
	})
	if snap != nil {
		t.Fatal("a snapshot came back with errors")
	}
	want := []string{"deploy/overlays/prod/kustomization.yaml: app-prod/StorageAccount/appstorage: ${STORAGE_PREFIX}: " +
		"variable is not set and has no default (strict substitution; set STORAGE_PREFIX with --substitute STORAGE_PREFIX=... or in a --substitute-from ConfigMap or Secret, or write ${STORAGE_PREFIX:=default}; $${STORAGE_PREFIX} is a literal)"}
	if diff := cmp.Diff(want, errorLines(err)); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}
