package asosrc

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// releaseRepo makes a Git repository whose tag v2.3.0 holds
// testdata/releases/legacy, as ASO's repository holds its releases.
func releaseRepo(t *testing.T) *Repo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("testdata", "releases", "legacy")
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := r.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "test", Email: "test@example.invalid", When: time.Unix(1700000000, 0)}
	h, err := wt.Commit("v2.3.0", &git.CommitOptions{Author: sig, Committer: sig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.CreateTag("v2.3.0", h, nil); err != nil {
		t.Fatal(err)
	}
	repo, err := OpenRepo(dir)
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

var widgetEntry = RemovedEntry{Group: "widget.azure.com", Version: "v1beta20200101", Kind: "Widget", LastIn: "v2.3.0", RemovedIn: "v2.4.0",
	Replacements: []string{"v1api20200101"}}

// A removed package whose conversion a current package of the same API
// version reproduces is aliased to it; its kind row comes from the
// release's resource methods and docs, and its hooks from the current kind.
func TestRemovedPackageAliased(t *testing.T) {
	repo := releaseRepo(t)
	cur := widgetFacts(t)
	cur.CRDVersion = "v1api20200101"
	explicitEmpty(cur, "WidgetProperties", "labels") // as the current layout marks it, on the ARM field
	current := &Current{Packages: map[string]*SchemaFile{"widget.azure.com/v1api20200101": cur},
		Kinds: []KindRow{{Group: "widget.azure.com", CRDVersion: "v1api20200101", Kind: "Widget", APIVersion: "2020-01-01",
			ARMType: "Microsoft.Widgets/widgets", Hooks: []string{"errorClassifier"}, ARMIDTemplate: "/subscriptions/{subscriptionId}/…/widgets/{name}"}}}
	ps, err := RemovedPackages(repo, []RemovedEntry{widgetEntry}, current, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 {
		t.Fatalf("%d packages", len(ps))
	}
	p := ps[0]
	if p.SchemaOf != "v1api20200101" || p.Schema != nil || !p.Legacy || p.LastIn != "v2.3.0" || len(p.Commit) != 40 {
		t.Errorf("package %+v: want an alias to v1api20200101, read in the legacy layout at v2.3.0", p)
	}
	want := KindRow{Group: "widget.azure.com", CRDVersion: "v1beta20200101", Kind: "Widget", Status: "removed", SupportedFrom: "v2.0.0-beta.0",
		APIVersion: "2020-01-01", ARMType: "Microsoft.Widgets/widgets",
		ARMIDTemplate: "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Widgets/widgets/{widgetsName}", // built from the scope and ARM type: the release wrote no ARM URI comment
		Scope:         "resourceGroup", OwnerGroup: "resources.azure.com", OwnerKind: "ResourceGroup", AzureNameField: true,
		Hooks: []string{"errorClassifier"}, Operations: []string{"DELETE", "GET", "PUT"}, SpecType: "Widget_Spec"}
	if len(p.Kinds) != 1 || !kindRowEqual(p.Kinds[0], want) {
		t.Errorf("kind rows %+v\nwant %+v", p.Kinds, want)
	}
}

// A removed package no current package converts the same keeps its own
// facts, and says how the candidates differ.
func TestRemovedPackageKeptWithItsFacts(t *testing.T) {
	repo := releaseRepo(t)
	cur := widgetFacts(t)
	cur.CRDVersion = "v1api20200101"
	cur.Types[0].EmptyIfNil = nil // a later release stopped sending zones as []
	explicitEmpty(cur, "WidgetProperties", "labels")
	current := &Current{Packages: map[string]*SchemaFile{"widget.azure.com/v1api20200101": cur}}
	ps, err := RemovedPackages(repo, []RemovedEntry{widgetEntry}, current, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	p := ps[0]
	if p.SchemaOf != "" || p.Schema == nil || !slices.Equal(p.Differs, []string{"v1api20200101: Widget_Spec: emptyIfNil [/properties/zones] vs []"}) {
		t.Errorf("package schemaOf %q, differs %q: want its own facts", p.SchemaOf, p.Differs)
	}
	if !slices.Equal(p.ExplicitEmpty, []string{"WidgetProperties.labels"}) {
		t.Errorf("explicit empty %v, want the spec-side labels", p.ExplicitEmpty)
	}
	if len(p.Kinds) != 1 || p.Kinds[0].SpecType != "Widget_Spec" || p.Kinds[0].Hooks != nil {
		t.Errorf("kind rows %+v", p.Kinds)
	}
}

func explicitEmpty(s *SchemaFile, arm, field string) {
	for _, at := range s.ARMTypes {
		for i := range at.Fields {
			if at.Name == arm && at.Fields[i].JSON == field {
				at.Fields[i].Flags += "e"
			}
		}
	}
}

func kindRowEqual(a, b KindRow) bool {
	return a.Group == b.Group && a.CRDVersion == b.CRDVersion && a.Kind == b.Kind && a.Status == b.Status && a.SupportedFrom == b.SupportedFrom &&
		a.APIVersion == b.APIVersion && a.ARMType == b.ARMType && a.ARMIDTemplate == b.ARMIDTemplate && a.Scope == b.Scope &&
		a.OwnerGroup == b.OwnerGroup && a.OwnerKind == b.OwnerKind && a.ArbitraryOwner == b.ArbitraryOwner &&
		(a.Singleton == nil) == (b.Singleton == nil) && a.AzureNameField == b.AzureNameField && a.UUIDv5 == b.UUIDv5 &&
		a.RandomNaming == b.RandomNaming && slices.Equal(a.Hooks, b.Hooks) && slices.Equal(a.Operations, b.Operations) && a.SpecType == b.SpecType
}
