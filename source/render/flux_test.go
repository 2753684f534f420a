package render

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// fluxFetch reads the whole repository at root, as gitaso --flux does,
// and renders from the entry path.
func fluxFetch(t *testing.T, root, entry string, opts Options) (*manifest.Snapshot, error) {
	t.Helper()
	opts.Flux, opts.FluxPath, opts.Kustomize = true, entry, true
	return fetch(t, root, "", opts)
}

// writeRepo writes files (path → content) into a temporary directory.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func ids(objs []manifest.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.ID())
	}
	slices.Sort(out)
	return out
}

func field(o manifest.Object, keys ...string) any {
	var v any = o.Content
	for _, k := range keys {
		m, _ := v.(map[string]any)
		v = m[k]
	}
	return v
}

// The seeds' shape: clusters/snd holds Flux's own bootstrap Kustomization
// (path ./clusters/snd: the entry itself, not rendered twice), a platform
// Kustomization (./platform, substituteFrom ConfigMap platform-vars, an
// optional Secret that does not exist, inline CLUSTER winning), a team
// Kustomization (kustomization.yaml of its own, targetNamespace, a JSON 6902
// and a strategic merge patch, a component, prune: false) and a suspended
// v1beta2 one without a kustomization.yaml.
func TestFluxSeeds(t *testing.T) {
	snap, err := fluxFetch(t, "testdata/flux/snd", "clusters/snd", Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"config-cluster-flux/ConfigMap/platform-vars",
		"platform/ConfigMap/literal",
		"platform/ResourceGroup/infra",
		"platform/ResourceGroup/kept-on-removal",
		"team-a/ResourceGroup/team-a-rg",
		"team-a/UserAssignedIdentity/kept-identity",
		"team-a/UserAssignedIdentity/team-identity",
		"team-b/ResourceGroup/team-b-rg",
	}
	if diff := cmp.Diff(want, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	wantIgnored := []string{
		"config-cluster-flux/Kustomization/platform",
		"config-cluster-flux/Kustomization/team-a",
		"config-cluster-flux/Kustomization/team-b",
		"flux-system/GitRepository/flux-system",
		"flux-system/Kustomization/flux-system",
	}
	if diff := cmp.Diff(wantIgnored, ids(snap.Ignored)); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}

	type check struct {
		id     string
		fields []string
		want   any
	}
	ann := func(k string) []string { return []string{"metadata", "annotations", k} }
	for _, c := range []check{
		// postBuild: substituteFrom ConfigMap, inline substitute wins over it.
		{"platform/ResourceGroup/infra", []string{"spec", "azureName"}, "sndadpinfrg1401"},
		{"platform/ResourceGroup/infra", []string{"spec", "tags"}, map[string]any{"environment": "snd", "cluster": "cluster-01"}},
		{"platform/ResourceGroup/infra", ann(AnnotationFluxKustomization), "config-cluster-flux/platform"},
		{"platform/ResourceGroup/infra", ann(aso.AnnotationReconcilePolicy), nil},
		// kustomize.toolkit.fluxcd.io/prune: disabled → detach-on-delete
		{"platform/ResourceGroup/kept-on-removal", ann(aso.AnnotationReconcilePolicy), "detach-on-delete"},
		// kustomize.toolkit.fluxcd.io/substitute: disabled
		{"platform/ConfigMap/literal", []string{"data", "template"}, "${NOT_SUBSTITUTED}"},
		// targetNamespace, JSON 6902 patch with a target, prune: false.
		{"team-a/ResourceGroup/team-a-rg", []string{"spec", "location"}, "ukwest"},
		{"team-a/ResourceGroup/team-a-rg", ann(aso.AnnotationReconcilePolicy), "detach-on-delete"},
		// strategic merge patch, component, substitution.
		{"team-a/UserAssignedIdentity/team-identity", []string{"spec", "tags"}, map[string]any{"team": "a"}},
		{"team-a/UserAssignedIdentity/team-identity", []string{"metadata", "labels", "team"}, "team-a"},
		{"team-a/UserAssignedIdentity/team-identity", []string{"spec", "azureName"}, "sndadpinfmid1401-team-a"},
		{"team-a/UserAssignedIdentity/team-identity", ann(AnnotationFluxKustomization), "config-cluster-flux/team-a"},
		// A policy the object sets is kept.
		{"team-a/UserAssignedIdentity/kept-identity", ann(aso.AnnotationReconcilePolicy), "manage"},
		// suspend: true → skip (rendered, never dropped).
		{"team-b/ResourceGroup/team-b-rg", ann(aso.AnnotationReconcilePolicy), "skip"},
		{"team-b/ResourceGroup/team-b-rg", ann(AnnotationFluxKustomization), "config-cluster-flux/team-b"},
		// A ConfigMap gets no reconcile policy.
		{"config-cluster-flux/ConfigMap/platform-vars", ann(aso.AnnotationReconcilePolicy), nil},
	} {
		got := field(find(t, snap, c.id), c.fields...)
		if diff := cmp.Diff(c.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", c.id, strings.Join(c.fields, "."), diff)
		}
	}
	// Objects name the Kustomization's file, or (when kustomize's origin
	// is known) the file they were written in.
	for id, files := range map[string][]string{
		"platform/ResourceGroup/infra":   {"clusters/snd/platform.yaml", "platform/resource-group.yaml"},
		"team-a/ResourceGroup/team-a-rg": {"clusters/snd/teams.yaml", "teams/team-a/resource-group.yaml"},
		"team-b/ResourceGroup/team-b-rg": {"clusters/snd/teams.yaml", "teams/team-b/resource-group.yaml"},
	} {
		if o := find(t, snap, id); !slices.Contains(files, o.File) {
			t.Errorf("%s: file %s, want one of %v", id, o.File, files)
		}
	}
}

// Without Flux the same entry path renders only its own files: the
// Kustomizations are ignored kinds, as before.
func TestFluxOff(t *testing.T) {
	snap, err := fetch(t, "testdata/flux/snd", "clusters/snd", Options{Kustomize: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != 0 || len(snap.Ignored) != 5 {
		t.Errorf("objects %v, ignored %v", ids(snap.Objects), ids(snap.Ignored))
	}
}

const rgDoc = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: %s
spec:
  location: uksouth
`

func fluxKustomizationDoc(name, path, extra string) string {
	return `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: ` + name + `
  namespace: flux-system
spec:
  interval: 10m
  path: ` + path + `
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
` + extra
}

func rg(name string) string { return strings.Replace(rgDoc, "%s", name, 1) }

// A Kustomization whose output holds further Kustomizations is followed,
// and its substitution reaches the child's spec (a common way to pick a
// cluster's directory).
func TestFluxRecursion(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/a/apps.yaml": fluxKustomizationDoc("apps", "./apps", "  postBuild:\n    substitute:\n      INNER: inner\n"),
		"apps/infra.yaml":      fluxKustomizationDoc("infra", "./deep/${INNER}", "  targetNamespace: deep\n  images:\n    - name: example/app\n      newTag: \"2.0\"\n  commonMetadata:\n    labels: {owner: platform}\n    annotations: {note: from-flux}\n"),
		"apps/rg.yaml":         rg("apps-rg"),
		"deep/inner/app.yaml":  "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\nspec:\n  template:\n    spec:\n      containers:\n        - name: app\n          image: example/app:1.0\n",
		"deep/inner/rg.yaml":   rg("inner-rg"),
		"deep/other/rg.yaml":   rg("not-reached"),
	})
	snap, err := fluxFetch(t, root, "clusters/a", Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"deep/ResourceGroup/inner-rg", "default/ResourceGroup/apps-rg"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	inner := find(t, snap, "deep/ResourceGroup/inner-rg")
	if got := inner.Annotations()[AnnotationFluxKustomization]; got != "flux-system/infra" {
		t.Errorf("inner-rg from %q, want flux-system/infra", got)
	}
	// spec.images (a Deployment: an ignored kind)
	image := "no Deployment"
	for _, o := range snap.Ignored {
		if o.Kind() == "Deployment" {
			image = fmt.Sprint(field(o, "spec", "template", "spec", "containers").([]any)[0].(map[string]any)["image"])
		}
	}
	if image != "example/app:2.0" {
		t.Errorf("image: %s, want example/app:2.0", image)
	}
	// spec.commonMetadata
	if inner.Labels()["owner"] != "platform" || inner.Annotations()["note"] != "from-flux" {
		t.Errorf("inner-rg labels %v annotations %v: want commonMetadata's", inner.Labels(), inner.Annotations())
	}
}

// Flux's precedence: substituteFrom in order (a later one wins), then
// substitute (inline, wins); an optional missing source is skipped. The
// global variables (--substitute) apply to the entry path only; a
// Kustomization without postBuild substitutes nothing; namePrefix and
// nameSuffix rename.
func TestFluxSubstitution(t *testing.T) {
	cm := func(name, data string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: flux-system\ndata:\n" + data
	}
	root := writeRepo(t, map[string]string{
		"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", `  namePrefix: p-
  nameSuffix: -s
  postBuild:
    substitute:
      INLINE: inline
    substituteFrom:
      - kind: ConfigMap
        name: first
      - kind: Secret
        name: second
      - kind: ConfigMap
        name: absent
        optional: true
`),
		"clusters/c/b.yaml":  fluxKustomizationDoc("b", "./two", ""),
		"clusters/c/rg.yaml": rg("entry") + "  tags:\n    g: ${GLOBAL}\n",
		"vars/first.yaml":    cm("first", "  INLINE: from-first\n  FIRST: first\n  LATER: first\n"),
		"vars/second.yaml":   "apiVersion: v1\nkind: Secret\nmetadata:\n  name: second\n  namespace: flux-system\nstringData:\n  LATER: second\n",
		"one/rg.yaml":        rg("x") + "  tags:\n    inline: ${INLINE}\n    first: ${FIRST}\n    later: ${LATER}\n    global: ${GLOBAL:=unset}\n",
		"two/rg.yaml":        rg("y") + "  tags:\n    literal: ${GLOBAL}\n",
	})
	snap, err := fluxFetch(t, root, "clusters/c", Options{Substitute: true, Strict: true, Vars: map[string]string{"GLOBAL": "global"}})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]map[string]any{
		"default/ResourceGroup/entry": {"g": "global"},
		"default/ResourceGroup/p-x-s": {"inline": "inline", "first": "first", "later": "second", "global": "unset"},
		"default/ResourceGroup/y":     {"literal": "${GLOBAL}"},
	} {
		if diff := cmp.Diff(want, field(find(t, snap, id), "spec", "tags")); diff != "" {
			t.Errorf("%s tags (-want +got):\n%s", id, diff)
		}
	}
}

// Kustomizations listed by the entry's own kustomization.yaml are found in
// its build output, with their file and line when kustomize knows them.
func TestFluxEntryKustomization(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/c/kustomization.yaml": "resources: [apps.yaml]\n",
		"clusters/c/apps.yaml":          fluxKustomizationDoc("apps", "./apps", ""),
		"clusters/c/unlisted.yaml":      fluxKustomizationDoc("unlisted", "./other", ""),
		"apps/rg.yaml":                  rg("apps-rg"),
		"other/rg.yaml":                 rg("other-rg"),
	})
	snap, err := fluxFetch(t, root, "clusters/c", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/apps-rg"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	bad := writeRepo(t, map[string]string{
		"clusters/c/kustomization.yaml": "resources: [apps.yaml]\n",
		"clusters/c/apps.yaml":          "# comment\n" + fluxKustomizationDoc("apps", "./missing", ""),
	})
	snap, err = fluxFetch(t, bad, "clusters/c", Options{})
	if _, err := failedUnit(t, snap, err, "Kustomization/flux-system/apps", manifest.ReasonArtifactFailed); err == nil || !strings.Contains(err.Error(), `clusters/c/apps.yaml:9: flux-system/Kustomization/apps: spec.path: "./missing"`) {
		t.Errorf("err = %v, want one naming clusters/c/apps.yaml:9 spec.path", err)
	}
}

// A Kustomization renders after those its dependsOn names, so its
// substituteFrom finds a ConfigMap they generate (configMapGenerator).
func TestFluxDependsOnOrder(t *testing.T) {
	root := writeRepo(t, map[string]string{
		// "a" comes first in the files but depends on "z".
		"clusters/c/a.yaml":       fluxKustomizationDoc("a", "./app", "  dependsOn:\n    - name: z\n  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: generated-vars\n"),
		"clusters/c/z.yaml":       fluxKustomizationDoc("z", "./vars", ""),
		"vars/kustomization.yaml": "configMapGenerator:\n  - name: generated-vars\n    namespace: flux-system\n    options: {disableNameSuffixHash: true}\n    literals: [LOCATION=ukwest]\n",
		"app/rg.yaml":             strings.Replace(rg("x"), "uksouth", "${LOCATION}", 1),
	})
	snap, err := fluxFetch(t, root, "clusters/c", Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := field(find(t, snap, "default/ResourceGroup/x"), "spec", "location"); got != "ukwest" {
		t.Errorf("location %v, want ukwest from the generated ConfigMap", got)
	}
}

// Errors name the Flux object's file and line, the object and the field;
// they fail the Kustomization's unit, not the revision.
func TestFluxErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		files  map[string]string
		unit   string   // the unit that fails
		reason string   // and why
		want   []string // substrings of its errors
		is     error
	}{{
		name: "cycle",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{
			"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", ""),
			"one/b.yaml":        fluxKustomizationDoc("b", "./two", ""),
			"two/a.yaml":        fluxKustomizationDoc("a", "./one", ""),
		},
		want: []string{"two/a.yaml:8: flux-system/Kustomization/a: spec.path: flux Kustomizations form a cycle: flux-system/a (clusters/c/a.yaml:1) → flux-system/b (one/b.yaml:1) → flux-system/a"},
		is:   ErrFluxCycle,
	}, {
		name: "self",
		unit: "Kustomization/flux-system/b", reason: manifest.ReasonBuildFailed,
		files: map[string]string{
			"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", ""),
			"one/b.yaml":        fluxKustomizationDoc("b", "./one", ""),
		},
		want: []string{"one/b.yaml:8: flux-system/Kustomization/b: spec.path: flux Kustomizations form a cycle: flux-system/b (one/b.yaml:1) → flux-system/b"},
		is:   ErrFluxCycle,
	}, {
		name: "oci source",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonArtifactFailed,
		files: map[string]string{
			"clusters/c/a.yaml": "---\n" + strings.Replace(fluxKustomizationDoc("a", "./one", ""), "kind: GitRepository", "kind: OCIRepository", 1),
			"one/rg.yaml":       rg("x"),
		},
		want: []string{"clusters/c/a.yaml:12: flux-system/Kustomization/a: spec.sourceRef.kind: OCIRepository flux-system: gitaso reads one Git repository"},
		is:   ErrFluxSource,
	}, {
		name: "bucket source",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonArtifactFailed,
		files: map[string]string{
			"clusters/c/a.yaml": strings.Replace(fluxKustomizationDoc("a", "./one", ""), "kind: GitRepository", "kind: Bucket", 1),
			"one/rg.yaml":       rg("x"),
		},
		want: []string{"clusters/c/a.yaml:11: flux-system/Kustomization/a: spec.sourceRef.kind: Bucket flux-system"},
		is:   ErrFluxSource,
	}, {
		name: "another repository",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonArtifactFailed,
		files: map[string]string{
			"clusters/c/sync.yaml": fluxKustomizationDoc("flux-system", "./clusters/c", "") +
				"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: flux-system\n  namespace: flux-system\nspec:\n  url: ssh://git@github.com/org/fleet.git\n" +
				"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  url: https://github.com/org/apps\n",
			"clusters/c/a.yaml": strings.Replace(fluxKustomizationDoc("a", "./one", ""), "name: flux-system", "name: apps", 1),
			"one/rg.yaml":       rg("x"),
		},
		want: []string{"clusters/c/a.yaml:12: flux-system/Kustomization/a: spec.sourceRef.name: GitRepository flux-system/apps is github.com/org/apps, another repository than the one gitaso reads (github.com/org/fleet)"},
		is:   ErrFluxSource,
	}, {
		name: "missing path",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonArtifactFailed,
		files: map[string]string{
			"clusters/c/a.yaml": fluxKustomizationDoc("a", "./nowhere", ""),
		},
		want: []string{`clusters/c/a.yaml:8: flux-system/Kustomization/a: spec.path: "./nowhere": no such directory`},
	}, {
		name: "strict unset variable",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{
			"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", "  postBuild:\n    substitute:\n      SET: x\n"),
			"one/rg.yaml":       rg("x") + "  tags:\n    a: ${UNSET}\n",
		},
		want: []string{"one/rg.yaml:1: default/ResourceGroup/x: ${UNSET} (postBuild of Flux Kustomization flux-system/a): variable is not set", "set UNSET in spec.postBuild.substitute"},
		is:   ErrUnsetVariable,
	}, {
		name: "missing substituteFrom",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{
			"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", "  postBuild:\n    substituteFrom:\n      - kind: ConfigMap\n        name: vars\n"),
			"one/rg.yaml":       rg("x"),
		},
		want: []string{"clusters/c/a.yaml:15: flux-system/Kustomization/a: spec.postBuild.substituteFrom: substitute-from ConfigMap/flux-system/vars: no ConfigMap flux-system/vars in the repository"},
	}, {
		name: "unsupported version",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{
			"clusters/c/a.yaml": strings.Replace(fluxKustomizationDoc("a", "./one", ""), "/v1\n", "/v1beta1\n", 1),
			"one/rg.yaml":       rg("x"),
		},
		want: []string{"clusters/c/a.yaml:1: flux-system/Kustomization/a: apiVersion: kustomize.toolkit.fluxcd.io/v1beta1 is not supported"},
	}, {
		name: "kustomize error in a generated kustomization",
		unit: "Kustomization/flux-system/a", reason: manifest.ReasonBuildFailed,
		files: map[string]string{
			"clusters/c/a.yaml": fluxKustomizationDoc("a", "./one", "  components:\n    - ../missing\n"),
			"one/rg.yaml":       rg("x"),
		},
		want: []string{"clusters/c/a.yaml:14: flux-system/Kustomization/a: spec.components[0]"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := fluxFetch(t, writeRepo(t, tc.files), "clusters/c", Options{Strict: true})
			_, err = failedUnit(t, snap, err, tc.unit, tc.reason)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error is not %v", tc.is)
			}
		})
	}
}

// An encrypted file a Kustomization reaches is decrypted like the entry's
// files; without a key it is an error naming the file (never built as
// ciphertext), and a file no Kustomization reaches does not matter.
func TestFluxSOPS(t *testing.T) {
	enc, err := os.ReadFile("testdata/sops/secret.sops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"clusters/c/a.yaml":          fluxKustomizationDoc("a", "./one", ""),
		"one/secret.sops.yaml":       string(enc),
		"unreached/secret.sops.yaml": string(enc),
	}
	root := writeRepo(t, files)
	snap, err := fluxFetch(t, root, "clusters/c", Options{})
	if _, err := failedUnit(t, snap, err, "Kustomization/flux-system/a", manifest.ReasonBuildFailed); err == nil || !strings.Contains(err.Error(), "one/secret.sops.yaml") || strings.Contains(err.Error(), "unreached/") {
		t.Fatalf("without a key: err = %v, want an error naming one/secret.sops.yaml only", err)
	}
	snap, err = fluxFetch(t, root, "clusters/c", Options{AgeIdentities: testIdentities(t, "test-only.agekey")})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"apps/Secret/app-credentials"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	if _, ok := find(t, snap, "apps/Secret/app-credentials").Content["sops"]; ok {
		t.Error("the Secret still holds its sops stanza")
	}
}

// The forms of one repository's URL compare equal.
func TestNormRepoURL(t *testing.T) {
	for _, u := range []string{"https://github.com/Org/Fleet", "https://github.com/org/fleet.git", "ssh://git@github.com/org/fleet",
		"git@github.com:org/fleet.git", "https://user@github.com:443/org/fleet/"} {
		if got := normRepoURL(u); got != "github.com/org/fleet" {
			t.Errorf("normRepoURL(%q) = %q", u, got)
		}
	}
	if got := normRepoURL(""); got != "" {
		t.Errorf("normRepoURL(\"\") = %q", got)
	}
	// A local path and its file:// URL are one repository (issue 25).
	for _, u := range []string{"/srv/git/fleet", "file:///srv/git/fleet", "/srv/git/fleet/", "/srv/git/fleet/.git", "/srv/git/x/../fleet"} {
		if got := normRepoURL(u); got != "local:/srv/git/fleet" {
			t.Errorf("normRepoURL(%q) = %q, want local:/srv/git/fleet", u, got)
		}
	}
}

// A GitRepository of the same repository under another name (the seeds'
// flux-system and an https form of its URL) is followed.
func TestFluxSameRepository(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/c/sync.yaml": fluxKustomizationDoc("flux-system", "./clusters/c", "") +
			"---\napiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: other-name\n  namespace: flux-system\nspec:\n  url: https://github.com/org/fleet\n",
		"clusters/c/a.yaml": strings.Replace(fluxKustomizationDoc("a", "./one", ""), "name: flux-system", "name: other-name", 1),
		"one/rg.yaml":       rg("x"),
	})
	snap, err := fluxFetch(t, root, "clusters/c", Options{RepositoryURL: "git@github.com:org/fleet.git"})
	if err != nil {
		t.Fatal(err)
	}
	find(t, snap, "default/ResourceGroup/x")
}

// An entry path that does not exist is a *source.PathNotFoundError, as
// without Flux.
func TestFluxEntryMissing(t *testing.T) {
	_, err := fluxFetch(t, writeRepo(t, map[string]string{"one/rg.yaml": rg("x")}), "clusters/none", Options{})
	if !errors.Is(err, source.ErrPathNotFound) {
		t.Fatalf("err = %v, want ErrPathNotFound", err)
	}
}

// fluxBenchRepo is a repository of n Kustomizations, each building a
// directory of files files of 4 resource groups.
func fluxBenchRepo(tb testing.TB, n, files int) string {
	tb.Helper()
	m := map[string]string{}
	for i := range n {
		dir := fmt.Sprintf("apps/app%03d", i)
		m[fmt.Sprintf("clusters/c/app%03d.yaml", i)] = fluxKustomizationDoc(fmt.Sprintf("app%03d", i), "./"+dir,
			"  targetNamespace: ns"+fmt.Sprint(i)+"\n  postBuild:\n    substitute:\n      LOC: uksouth\n")
		for j := range files {
			var b strings.Builder
			for k := range 4 {
				fmt.Fprintf(&b, "---\n%s  tags:\n    loc: ${LOC}\n", rg(fmt.Sprintf("rg-%d-%d", j, k)))
			}
			m[fmt.Sprintf("%s/f%03d.yaml", dir, j)] = b.String()
		}
	}
	root := tb.TempDir()
	for p, c := range m {
		f := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(f), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return root
}

// 40 Kustomizations of 25 files (4,000 objects).
func BenchmarkFlux(b *testing.B) {
	root := fluxBenchRepo(b, 40, 25)
	r, err := New(Options{Kustomize: true, Flux: true, FluxPath: "clusters/c", Strict: true})
	if err != nil {
		b.Fatal(err)
	}
	src := source.NewDir(root, "", source.WithRenderer(r))
	for b.Loop() {
		snap, err := src.Fetch(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Objects) != 4000 {
			b.Fatalf("%d objects", len(snap.Objects))
		}
	}
}

// FuzzFlux renders a repository whose entry holds the fuzzed document
// (seeded with Kustomizations): never a panic, and an error is a
// diag.List or a path error.
func FuzzFlux(f *testing.F) {
	f.Add(fluxKustomizationDoc("a", "./one", ""))
	f.Add(fluxKustomizationDoc("a", "./one", "  targetNamespace: x\n  patches:\n    - patch: '[{\"op\":\"add\",\"path\":\"/spec/tags\",\"value\":{}}]'\n      target: {kind: ResourceGroup}\n"))
	f.Add(fluxKustomizationDoc("a", "./one", "  postBuild:\n    substitute: {A: b}\n    substituteFrom: [{kind: ConfigMap, name: v, optional: true}]\n"))
	f.Add(fluxKustomizationDoc("a", "./two", "  suspend: true\n"))
	f.Add(fluxKustomizationDoc("a", "../..", "  components: [../comp]\n"))
	r, err := New(Options{Kustomize: true, Flux: true, FluxPath: "clusters/c", Strict: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		files := []source.File{
			{Path: "clusters/c/k.yaml", Data: []byte(doc)},
			{Path: "one/rg.yaml", Data: []byte(rg("x") + "  tags:\n    a: ${A:=z}\n")},
			{Path: "two/k.yaml", Data: []byte(fluxKustomizationDoc("b", "./one", ""))},
			{Path: "comp/kustomization.yaml", Data: []byte("apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n")},
		}
		_, _ = source.Build(context.Background(), "fuzz", files, r)
	})
}
