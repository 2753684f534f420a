package render

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/manifest"
)

// froms lists where an object's secret values came from, and the values
// (the test's own; never printed by the types).
func froms(o manifest.Object) []string {
	var out []string
	for _, s := range o.Secrets {
		out = append(out, s.From+"="+s.Value())
	}
	return out
}

// TestSubstitutedSecretValuesAreRecorded: a value --substitute-from took
// from a Secret travels with the object it was substituted into
// (manifest.Object.Secrets), naming the Secret; a value from a ConfigMap,
// or from an inline --substitute that overrides the Secret's, does not; an
// object not naming the variable holds none.
func TestSubstitutedSecretValuesAreRecorded(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"vars.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: tokens, namespace: platform}\nstringData:\n  TOKEN: tok-123\n  OVERRIDDEN: from-secret\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: platform}\ndata:\n  TEAM: team-a\n",
		"a.yaml": rg("a") + "  tags:\n    t: pre-${TOKEN}-post\n    team: ${TEAM}\n",
		"b.yaml": rg("b") + "  tags:\n    team: ${TEAM}\n    o: ${OVERRIDDEN}\n",
		"c.yaml": rg("c") + "---\n" + rg("d") + "  tags:\n    t: ${TOKEN}\n",
	})
	snap, err := fetch(t, root, "", Options{Substitute: true, Vars: map[string]string{"OVERRIDDEN": "inline"},
		SubstituteFrom: []Ref{{Kind: "Secret", Namespace: "platform", Name: "tokens"}, {Kind: "ConfigMap", Namespace: "platform", Name: "vars"}}})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string][]string{
		"default/ResourceGroup/a": {"Secret platform/tokens=tok-123"},
		"default/ResourceGroup/b": nil,
		"default/ResourceGroup/c": nil, // same file as d, holds no value
		"default/ResourceGroup/d": {"Secret platform/tokens=tok-123"},
	} {
		if diff := cmp.Diff(want, froms(find(t, snap, id))); diff != "" {
			t.Errorf("%s: secret values (-want +got):\n%s", id, diff)
		}
	}
}

// TestFluxSubstituteFromSecretIsRecorded: a Flux Kustomization's
// substituteFrom naming a Secret of the repository, or one exported (or
// read from the cluster), records its values in the objects it renders.
func TestFluxSubstituteFromSecretIsRecorded(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"clusters/c/apps.yaml": fluxKustomizationDoc("apps", "./apps", `  postBuild:
    substituteFrom:
      - kind: Secret
        name: repo-secret
      - kind: Secret
        name: cluster-secret
      - kind: ConfigMap
        name: plain
`),
		"clusters/c/vars.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: repo-secret, namespace: flux-system}\nstringData:\n  KEY: repo-value-1\n" +
			"---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, namespace: flux-system}\ndata:\n  NAME: plain-name\n",
		"apps/rg.yaml": rg("x") + "  tags:\n    k: ${KEY}\n    c: ${FROM_CLUSTER}\n    n: ${NAME}\n",
	})
	exported := func(secret bool, ns, name string) (map[string]string, bool) {
		if secret && ns == "flux-system" && name == "cluster-secret" {
			return map[string]string{"FROM_CLUSTER": "cluster-value-2"}, true
		}
		return nil, false
	}
	snap, err := fluxFetch(t, root, "clusters/c", Options{Substitute: true, Strict: true, Exported: exported})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Secret flux-system/cluster-secret=cluster-value-2", "Secret flux-system/repo-secret=repo-value-1"}
	if diff := cmp.Diff(want, froms(find(t, snap, "default/ResourceGroup/x"))); diff != "" {
		t.Errorf("secret values (-want +got):\n%s", diff)
	}
}

// TestSecretValueFoundAsParsed: the parser reads a substituted value's
// escapes, trims a plain scalar and types "0x1F" as the integer 31; the
// field holding it is found all the same, and masking the object leaves
// no form of the value in it.
func TestSecretValueFoundAsParsed(t *testing.T) {
	root := writeRepo(t, map[string]string{
		"vars.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: tokens, namespace: platform}\nstringData:\n" +
			"  ESC: 'tab\\tsecret-1'\n  SPACED: '  spaced-secret-2  '\n  HEX: '0x1F'\n  QUOTED: \"it''s-secret-3\"\n",
		"a.yaml": rg("a") + "  tags:\n    esc: \"${ESC}\"\n    spaced: ${SPACED}\n    quoted: '${QUOTED}'\n  n: ${HEX}\n",
	})
	snap, err := fetch(t, root, "", Options{Substitute: true, SubstituteFrom: []Ref{{Kind: "Secret", Namespace: "platform", Name: "tokens"}}})
	if err != nil {
		t.Fatal(err)
	}
	o := find(t, snap, "default/ResourceGroup/a")
	spec := o.Content["spec"].(map[string]any)
	tags := spec["tags"].(map[string]any)
	if tags["esc"] != "tab\tsecret-1" || tags["spaced"] != "spaced-secret-2" || tags["quoted"] != "it's-secret-3" || fmt.Sprint(spec["n"]) != "31" {
		t.Fatalf("parsed %#v %#v: the test's premise does not hold", tags, spec["n"])
	}
	masked, _ := manifest.Mask(o.Content, o.Secrets)
	m := masked.(map[string]any)["spec"].(map[string]any)
	for k, v := range m["tags"].(map[string]any) {
		if !manifest.IsSecretLabel(v.(string)) {
			t.Errorf("tag %s = %q not masked", k, v)
		}
	}
	if n, ok := m["n"].(string); !ok || !manifest.IsSecretLabel(n) {
		t.Errorf("n = %v not masked", m["n"])
	}
}
