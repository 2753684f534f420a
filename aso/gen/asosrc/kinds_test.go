package asosrc

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

var updateKinds = flag.Bool("update-kinds", false, "rewrite the golden files under testdata/kinds/want")

// kindsTree is a made-up ASO-shaped tree: group toy.azure.com with five
// generated kinds in v1api20240101 (every scope, a singleton, known and
// arbitrary owners, hooks, a UUIDv5 default), a generated package the index
// names only in an unlinked row (v20240101) and a hand-written v1.
const kindsTree = "testdata/kinds"

var testProv = Provenance{Source: "https://example.com/aso", License: "MIT",
	Commit: "0123456789abcdef0123456789abcdef01234567", CommitDate: "2026-01-02T03:04:05+00:00"}

// TestExtractGolden extracts every fact of the tree and compares kinds.json
// and provenance.json byte for byte with the golden files (the schema files
// and exceptions.json are the schema side's, tested there).
func TestExtractGolden(t *testing.T) {
	f, err := Extract(kindsTree, testProv)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"exceptions.json", "kinds.json", "provenance.json",
		"schema/toy.azure.com/v1api20240101.json", "schema/toy.azure.com/v20240101.json"}
	if got := f.Paths(); !reflect.DeepEqual(got, want) {
		t.Errorf("files %q, want %q", got, want)
	}
	for _, name := range []string{"kinds.json", "provenance.json"} {
		golden := filepath.Join(kindsTree, "want", name)
		if *updateKinds {
			if err := os.WriteFile(golden, f.Files[name], 0o644); err != nil {
				t.Fatal(err)
			}
		}
		w, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.Files[name], w) {
			t.Errorf("%s differs from %s (go test -update-kinds rewrites it):\n%s", name, golden, f.Files[name])
		}
	}
	if want := []string{"not a known hook: v2/api/toy/customizations/toy_extensions.go: ToyExtension.Frobnicate"}; !reflect.DeepEqual(f.Warnings, want) {
		t.Errorf("warnings %q, want %q", f.Warnings, want)
	}
	again, err := Extract(kindsTree, testProv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Files, f.Files) {
		t.Error("a second extraction differs from the first")
	}
}

// TestKindsFacts checks each fact of the made-up tree where it comes from.
func TestKindsFacts(t *testing.T) {
	res, err := Kinds(kindsTree)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Kind{}
	for _, k := range res.Kinds {
		by[k.CRDVersion+"/"+k.Kind] = k
	}
	if len(by) != 7 {
		t.Fatalf("%d kinds, want 7: %v", len(by), by)
	}
	def := "default"
	cases := []struct {
		name string
		got  any
		want any
	}{
		// The index: section → status, Supported From, the sample's path.
		{"Realm status", by["v1api20240101/Realm"].Status, "next"},
		{"Tenancy status", by["v1api20240101/Tenancy"].Status, "deprecated"},
		{"ToysSetting from", by["v1api20240101/ToysSetting"].SupportedFrom, "v2.4.0"},
		{"Toy sample", by["v1api20240101/Toy"].Sample, "v2/samples/toy/v1api20240101/v1api_toy.yaml"},
		// An unlinked row: the generated kind is unlisted, its package named in the provenance.
		{"v20240101 Toy status", by["v20240101/Toy"].Status, "unlisted"},
		{"v20240101 Toy from", by["v20240101/Toy"].SupportedFrom, ""},
		{"unlisted packages", res.Unlisted, []string{"toy/v20240101"}},
		// A row without generated code: hand-written.
		{"User generated", by["v1/User"].Generated, false},
		{"User status", by["v1/User"].Status, "released"},
		// Resource methods; string(APIVersion_Value) is resolved through the constant.
		{"Toy api", by["v1api20240101/Toy"].APIVersion, "2024-01-01"},
		{"Toy armType", by["v1api20240101/Toy"].ARMType, "Microsoft.Toy/toys"},
		{"Toy spec", by["v1api20240101/Toy"].SpecType, "Toy_Spec"},
		{"ToysSetting ops", by["v1api20240101/ToysSetting"].Operations, []string{"DELETE", "GET", "HEAD", "PUT"}},
		{"Tenancy ops", by["v1api20240101/Tenancy"].Operations, []string{"GET", "PUT"}},
		{"ToysSetting singleton", by["v1api20240101/ToysSetting"].Singleton, &def},
		{"ToysSetting azureName", by["v1api20240101/ToysSetting"].AzureNameField, false},
		{"Toy singleton", by["v1api20240101/Toy"].Singleton, (*string)(nil)},
		{"Toy azureName", by["v1api20240101/Toy"].AzureNameField, true},
		// Scopes, owners and ID templates.
		{"Toy scope", by["v1api20240101/Toy"].Scope, "resourceGroup"},
		{"Toy owner", by["v1api20240101/Toy"].Owner, &Owner{Group: "resources.azure.com", Kind: "ResourceGroup"}},
		{"Toy id", by["v1api20240101/Toy"].ARMIDTemplate, "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Toy/toys/{toyName}"},
		{"Toy notes", by["v1api20240101/Toy"].URINotes, []string{`URI has "resourcegroups"; ASO sends "resourceGroups"`}},
		{"ToysSetting owner", by["v1api20240101/ToysSetting"].Owner, &Owner{Group: "toy.azure.com", Kind: "Toy"}},
		{"ToyAssignment scope", by["v1api20240101/ToyAssignment"].Scope, "extension"},
		{"ToyAssignment owner", by["v1api20240101/ToyAssignment"].Owner, &Owner{Arbitrary: true}},
		{"ToyAssignment id", by["v1api20240101/ToyAssignment"].ARMIDTemplate, "{ownerArmId}/providers/Microsoft.Toy/assignments/{assignmentName}"},
		{"Tenancy scope", by["v1api20240101/Tenancy"].Scope, "tenant"},
		{"Tenancy owner", by["v1api20240101/Tenancy"].Owner, (*Owner)(nil)},
		{"Realm scope", by["v1api20240101/Realm"].Scope, "location"},
		{"Realm id", by["v1api20240101/Realm"].ARMIDTemplate, "/subscriptions/{subscriptionId}/resourceGroups/{realmName}"},
		{"Realm notes", by["v1api20240101/Realm"].URINotes, []string(nil)},
		{"Toy generatedFrom", by["v1api20240101/Toy"].GeneratedFrom, "/toy/resource-manager/Microsoft.Toy/stable/2024-01-01/toy.json"},
		// Hooks from customizations apply to every version of the kind.
		{"Toy hooks", by["v1api20240101/Toy"].Hooks, []string{"azureGeneratedSecrets", "errorClassifier"}},
		{"v20240101 Toy hooks", by["v20240101/Toy"].Hooks, []string{"azureGeneratedSecrets", "errorClassifier"}},
		{"ToysSetting hooks", by["v1api20240101/ToysSetting"].Hooks, []string{"armPayloadModifier", "preReconcileCheck"}},
		{"Realm hooks", by["v1api20240101/Realm"].Hooks, []string(nil)},
		// Webhook defaults: only a UUIDv5 counts.
		{"ToyAssignment default", by["v1api20240101/ToyAssignment"].AzureNameDef, &AzureNameDefault{UUIDv5: "ownerScopedLegacy", NamingConventionRandom: true}},
		{"Toy default", by["v1api20240101/Toy"].AzureNameDef, (*AzureNameDefault)(nil)},
	}
	for _, c := range cases {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s: got %#v, want %#v", c.name, c.got, c.want)
		}
	}
}

// treeFS loads the made-up tree into memory so that a test can change it.
func treeFS(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	err := fs.WalkDir(os.DirFS(kindsTree), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "want/") {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(kindsTree), p)
		m[p] = &fstest.MapFile{Data: b}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestKindsErrors: input the extractor cannot read is an error naming the
// file and what is wrong, never a silently different catalog.
func TestKindsErrors(t *testing.T) {
	const index = "docs/hugo/content/reference/toy/_index.md"
	const toy = "v2/api/toy/v1api20240101/toy_types_gen.go"
	edit := func(file, old, new string) func(fstest.MapFS) error {
		return func(m fstest.MapFS) error {
			s := string(m[file].Data)
			if !strings.Contains(s, old) {
				t.Fatalf("%s has no %q", file, old)
			}
			m[file] = &fstest.MapFile{Data: []byte(strings.Replace(s, old, new, 1))}
			return nil
		}
	}
	cases := []struct {
		name   string
		change func(fstest.MapFS) error
		want   []string
	}{
		{"row names a kind the package lacks", edit(index, "[Toy]({{<", "[Toyz]({{<"),
			[]string{index + ":18:", "Toyz", "v2/api/toy/v1api20240101 does not generate"}},
		{"row listed twice", edit(index, "### Deprecated\n", "### Deprecated\n| [Toy]({{< relref \"/reference/toy/v1api20240101#Toy\" >}}) | 2024-01-01 | v1api20240101 | v2.3.0 | [View](x) |\n"),
			[]string{index + ":35:", "listed again", "first at " + index + ":18"}},
		{"unknown section", edit(index, "### Released", "### Retired"),
			[]string{index, `unknown section "Retired"`}},
		{"row with a missing cell", edit(index, "| v2.4.0         |", "|"),
			[]string{index + ":20:", "ToysSetting", "4 cells"}},
		{"unknown scope", edit(toy, "genruntime.ResourceScopeResourceGroup", "genruntime.ResourceScopeGalaxy"),
			[]string{toy, "resource Toy", "ResourceScopeGalaxy"}},
		{"GetType not a constant", edit(toy, `return "Microsoft.Toy/toys"`, `return toy.armType`),
			[]string{toy, "resource Toy", "GetType", "string constant"}},
		{"no ARM URI and an ARM type without namespace", func(m fstest.MapFS) error {
			edit(toy, "// - ARM URI:", "// - URI:")(m)
			return edit(toy, `return "Microsoft.Toy/toys"`, `return "toys"`)(m)
		}, []string{toy, "resource Toy", "ARM URI", `"toys"`}},
		{"owner of an unknown type", edit(toy, "*genruntime.KnownResourceReference", "*genruntime.ResourceReference"),
			[]string{toy, "Toy_Spec.owner", "*genruntime.ResourceReference"}},
		{"operation not a constant", edit(toy, "genruntime.ResourceOperationDelete,", `"DELETE",`),
			[]string{toy, "GetSupportedOperations", "not a genruntime.ResourceOperation"}},
		{"Go that does not parse", edit(toy, "type Toy struct {", "type Toy struct {{"),
			[]string{"parse " + toy}},
		{"no index", func(m fstest.MapFS) error { delete(m, index); return nil },
			[]string{"no docs/hugo/content/reference/<group>/_index.md"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := treeFS(t)
			if err := c.change(m); err != nil {
				t.Fatal(err)
			}
			_, err := KindsFS(m)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
	// The unchanged tree reads.
	if _, err := KindsFS(treeFS(t)); err != nil {
		t.Fatal(err)
	}
}

// TestKindsOlderReleases: the shapes of ASO releases before the pinned
// commit read too (every minor release since v2.0.0 extracts).
func TestKindsOlderReleases(t *testing.T) {
	const index = "docs/hugo/content/reference/toy/_index.md"
	m := treeFS(t)
	set := func(file, old, new string) {
		s := string(m[file].Data)
		if !strings.Contains(s, old) {
			t.Fatalf("%s has no %q", file, old)
		}
		m[file] = &fstest.MapFile{Data: []byte(strings.Replace(s, old, new, 1))}
	}
	// Before v2.11 the index linked to the published site.
	set(index, `[Toy]({{< relref "/reference/toy/v1api20240101#Toy" >}})`,
		"[Toy](https://azure.github.io/azure-service-operator/reference/toy/v1api20240101/#toy.azure.com/v1api20240101.Toy)")
	// Before v2.4 there was no GetSupportedOperations.
	set("v2/api/toy/v1api20240101/tenancy_types_gen.go", ") GetSupportedOperations()", ") getSupportedOperationsNotYet()")
	// containerservice ManagedCluster had no Generator information in v2.11 to v2.17.
	set("v2/api/toy/v1api20240101/toy_types_gen.go", "// - ARM URI:", "// - Not an ARM URI:")
	// Before v2.11 genruntime.KubernetesExporter exported secrets and config maps.
	set("v2/api/toy/customizations/toy_extensions.go", ") ExportKubernetesSecrets(", ") ExportKubernetesResources(")

	res, err := KindsFS(m)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Kind{}
	for _, k := range res.Kinds {
		by[k.CRDVersion+"/"+k.Kind] = k
	}
	toy, tenancy := by["v1api20240101/Toy"], by["v1api20240101/Tenancy"]
	if toy.Status != "latest" || toy.SupportedFrom != "v2.3.0" {
		t.Errorf("Toy linked to the site: status %q from %q", toy.Status, toy.SupportedFrom)
	}
	if want := []string{"DELETE", "GET", "PUT"}; !reflect.DeepEqual(tenancy.Operations, want) {
		t.Errorf("Tenancy without GetSupportedOperations: %q, want %q", tenancy.Operations, want)
	}
	const uri = "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/Microsoft.Toy/toys/{toysName}"
	if toy.ARMURITemplate != uri || toy.ARMIDTemplate != uri || !reflect.DeepEqual(toy.URINotes, []string{uriBuiltNote}) {
		t.Errorf("Toy without ARM URI: %q %q %q", toy.ARMURITemplate, toy.ARMIDTemplate, toy.URINotes)
	}
	if want := []string{"azureGeneratedSecrets", "errorClassifier"}; !reflect.DeepEqual(toy.Hooks, want) {
		t.Errorf("Toy hooks %q, want %q", toy.Hooks, want)
	}
}

func TestURIFromType(t *testing.T) {
	cases := []struct{ scope, armType, uri string }{
		{"resourceGroup", "A.B/cs/ds", "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/providers/A.B/cs/{csName}/ds/{dsName}"},
		{"extension", "A.B/rs", "/{scope}/providers/A.B/rs/{rsName}"},
		{"tenant", "A.B/as", "/providers/A.B/as/{asName}"},
		{"location", "Microsoft.Resources/resourceGroups", "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}"},
		{"resourceGroup", "nonamespace", ""},
	}
	for _, c := range cases {
		if got := uriFromType(c.scope, c.armType); got != c.uri {
			t.Errorf("uriFromType(%s, %s) = %q, want %q", c.scope, c.armType, got, c.uri)
		}
	}
}

func TestIDTemplate(t *testing.T) {
	cases := []struct{ scope, uri, id, note string }{
		{"resourceGroup", "/subscriptions/{s}/resourceGroups/{rg}/providers/A.B/cs/{c}", "/subscriptions/{s}/resourceGroups/{rg}/providers/A.B/cs/{c}", ""},
		{"resourceGroup", "/subscriptions/{s}/resourcegroups/{rg}/providers/A.B/cs/{c}", "/subscriptions/{s}/resourceGroups/{rg}/providers/A.B/cs/{c}", `URI has "resourcegroups"; ASO sends "resourceGroups"`},
		{"location", "/subscriptions/{s}/resourcegroups/{rg}", "/subscriptions/{s}/resourceGroups/{rg}", ""},
		{"tenant", "/providers/A.B/as/{a}", "/providers/A.B/as/{a}", ""},
		{"extension", "/{scope}/providers/A.B/rs/{r}", "{ownerArmId}/providers/A.B/rs/{r}", ""},
		{"extension", "/{resourceUri}/providers/A.B/ds/{d}", "{ownerArmId}/providers/A.B/ds/{d}", ""},
		// Only the first segment is replaced, as the former extractor did
		// (kubernetesconfiguration Extension and FluxConfiguration).
		{"extension", "/subscriptions/{s}/resourceGroups/{rg}/providers/{rp}/{t}/{c}/providers/A.B/es/{e}", "{ownerArmId}/{s}/resourceGroups/{rg}/providers/{rp}/{t}/{c}/providers/A.B/es/{e}", ""},
	}
	for _, c := range cases {
		id, notes := idTemplate(c.scope, c.uri)
		note := strings.Join(notes, "|")
		if id != c.id || note != c.note {
			t.Errorf("idTemplate(%s, %s) = %s %q, want %s %q", c.scope, c.uri, id, note, c.id, c.note)
		}
	}
}

func TestKindQuote(t *testing.T) {
	var b bytes.Buffer
	kindQuote(&b, "a\"b\\c\n\t\x01<>&/é😀\x7f")
	if got, want := b.String(), `"a\"b\\c\n\t\u0001<>&/\u00e9\ud83d\ude00`+"\x7f"+`"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestGitTree reads the made-up tree from a Git repository, as
// make aso-catalog ASO_SRC=<ASO git dir> does, and gets the same facts as
// from the directory, with the commit and its date as git prints them.
func TestGitTree(t *testing.T) {
	dir, commit := commitTree(t, kindsTree)
	fsys, gotCommit, date, err := GitTree(dir, "main")
	if err != nil {
		t.Fatal(err)
	}
	if gotCommit != commit || date != "2026-01-02T03:04:05+01:00" {
		t.Errorf("commit %s %s, want %s 2026-01-02T03:04:05+01:00", gotCommit, date, commit)
	}
	if err := fstest.TestFS(fsys, "v2/api/toy/v1api20240101/toy_types_gen.go", "docs/hugo/content/reference/toy/_index.md"); err != nil {
		t.Fatal(err)
	}
	fromGit, err := ExtractFS(fsys, testProv)
	if err != nil {
		t.Fatal(err)
	}
	fromDir, err := Extract(kindsTree, testProv)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromGit.Files, fromDir.Files) {
		t.Error("the facts read from Git differ from the directory's")
	}
	if _, _, _, err := GitTree(dir, "v9.9.9"); err == nil || !strings.Contains(err.Error(), `"v9.9.9"`) {
		t.Errorf("unknown ref: error %v", err)
	}
	// A bare clone, as the fetch mirrors are.
	bare := filepath.Join(t.TempDir(), "bare.git")
	gitRun(t, "", "clone", "-q", "--bare", dir, bare)
	if _, c, _, err := GitTree(bare, commit); err != nil || c != commit {
		t.Errorf("bare: %s %v", c, err)
	}
}

// commitTree commits a copy of src (without want/) in a new repository on
// branch main, with a fixed date.
func commitTree(t *testing.T, src string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(os.DirFS(src), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "want/") {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(src), p)
		if err != nil {
			return err
		}
		fn := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fn), 0o755); err != nil {
			return err
		}
		return os.WriteFile(fn, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	gitRun(t, dir, "init", "-q", "-b", "main")
	gitRun(t, dir, "add", ".")
	gitRun(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "tree")
	return dir, gitRun(t, dir, "rev-parse", "HEAD")
}

func gitRun(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	out, err := gitCmd(args...)
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(out)
}

// gitCmd runs git with fixed author and committer dates and no user or
// system configuration.
func gitCmd(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05+01:00", "GIT_COMMITTER_DATE=2026-01-02T03:04:05+01:00")
	out, err := cmd.CombinedOutput()
	return string(out), err
}
