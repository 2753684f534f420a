package aso

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testCatalog builds a catalog in the embedded format from testdata/removed
// (kinds.json and one JSON file per package, see its README.md).
func testCatalog(t *testing.T) *catalog {
	t.Helper()
	dir := filepath.Join("testdata", "removed")
	kinds, err := os.ReadFile(filepath.Join(dir, "kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bin bytes.Buffer
	index := map[string][2]int{}
	for key, file := range map[string]string{
		"widgets.azure.com/v1api20240101":  "v1api20240101.json",
		"widgets.azure.com/v1beta20200101": "v1beta20200101.json",
	} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		start := bin.Len()
		if err := gzipTo(&bin, raw); err != nil {
			t.Fatal(err)
		}
		index[key] = [2]int{start, bin.Len() - start}
	}
	doc, err := json.Marshal(map[string]any{"provenance": Provenance{Commit: "test"}, "kinds": json.RawMessage(kinds), "packages": index})
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	if err := gzipTo(&gz, doc); err != nil {
		t.Fatal(err)
	}
	c, err := decodeCatalog(gz.Bytes(), bin.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A removed version the catalog holds converts with its own release's
// schema and api-version, not the newest one's, and says what replaces it.
func TestRemovedKindConvertsWithItsReleaseSchema(t *testing.T) {
	c := testCatalog(t)
	if len(c.kinds) != 1 || len(c.removed) != 2 {
		t.Fatalf("kinds %d, removed %d: want 1 shipped and 2 removed", len(c.kinds), len(c.removed))
	}
	k, ok := c.lookup("widgets.azure.com", "v1beta20200101", "Widget")
	if !ok || k.Removed == nil {
		t.Fatalf("v1beta20200101 Widget: found %v, removed %+v", ok, k)
	}
	if k.APIVersion != "2020-01-01" {
		t.Errorf("api-version %s, want the removed release's 2020-01-01", k.APIVersion)
	}
	b, err := Convert(k, map[string]any{"location": "westeurope", "size": int64(3)}, "w1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"location":"westeurope","name":"w1","properties":{"widgetSize":3}}`; string(b.JSON) != want {
		t.Errorf("body %s, want %s", b.JSON, want)
	}
	// The newest version's field is not the old one's.
	if l := Validate(k, map[string]any{"apiVersion": "widgets.azure.com/v1beta20200101", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"location": "westeurope", "capacity": int64(3)}}); len(l) == 0 {
		t.Error("spec.capacity (the newest version's field) accepted in v1beta20200101")
	}
	want := "widgets.azure.com/v1beta20200101 Widget was removed in ASO v2.4.0 (last in v2.3.0); use widgets.azure.com/v1api20240101; planned with ASO v2.3.0's conversion"
	if got := k.Removed.Warning(); got != want {
		t.Errorf("warning\n got %s\nwant %s", got, want)
	}
}

// A removed version whose schema was the same as a version the catalog
// ships uses that package, and its warning says so.
func TestRemovedKindAliasUsesTheSamePackage(t *testing.T) {
	c := testCatalog(t)
	k, ok := c.lookup("widgets.azure.com", "v1beta20240101", "Widget")
	if !ok || k.Removed == nil || k.Removed.SchemaOf != "v1api20240101" {
		t.Fatalf("v1beta20240101 Widget: found %v, %+v", ok, k)
	}
	cur, _ := c.lookup("widgets.azure.com", "v1api20240101", "Widget")
	if cur.Removed != nil || k.pkg != cur.pkg {
		t.Errorf("alias package %p, shipped %p (removed %v): want the same package", k.pkg, cur.pkg, cur.Removed)
	}
	b, err := Convert(k, map[string]any{"location": "westeurope", "capacity": int64(2)}, "w2", nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"location":"westeurope","name":"w2","properties":{"capacity":2}}`; string(b.JSON) != want {
		t.Errorf("body %s, want %s", b.JSON, want)
	}
	if w := k.Removed.Warning(); !strings.HasSuffix(w, "; planned with ASO v2.6.0's conversion, which widgets.azure.com/v1api20240101 reproduces") {
		t.Errorf("warning %s", w)
	}
}

// Every removed kind of the embedded catalog is in removed.json with the
// same releases and replacements, converts from a package the catalog has,
// and is not among the kinds ASO ships.
func TestEmbeddedRemovedKinds(t *testing.T) {
	if got, want := len(RemovedKinds()), len(RemovedVersions()); got != want {
		t.Errorf("the catalog holds %d of the %d removed versions of removed.json: regenerate it with\n"+
			"  make aso-catalog ASO_SRC=<ASO git directory>", got, want)
	}
	if p := CatalogProvenance(); p.RemovedKinds != len(RemovedKinds()) || len(p.Releases) == 0 {
		t.Errorf("provenance of the removed versions: %d kinds, releases %v", p.RemovedKinds, p.Releases)
	}
	for _, k := range RemovedKinds() {
		r, ok := LookupRemoved(k.Group, k.Version, k.Kind)
		if !ok {
			t.Errorf("%s: in the catalog as removed, not in removed.json", k)
			continue
		}
		if r.LastIn != k.Removed.LastIn || r.RemovedIn != k.Removed.RemovedIn || strings.Join(r.Replacements, ",") != strings.Join(k.Removed.Replacements, ",") {
			t.Errorf("%s: catalog %+v, removed.json %+v", k, *k.Removed, r)
		}
		if _, err := k.spec(); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	for _, k := range Kinds() {
		if k.Removed != nil {
			t.Errorf("%s: removed, listed among the shipped kinds", k)
		}
	}
}

func gzipTo(w *bytes.Buffer, data []byte) error {
	zw := gzip.NewWriter(w)
	if _, err := zw.Write(data); err != nil {
		return err
	}
	return zw.Close()
}
