package asosrc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemovedPackagesFromTags is a development check: with GITASO_ASO_GIT
// set to ASO's git directory and GITASO_SHARED to ../shared, it reads every
// package of aso/catalog/removed.json at the release that last had it and
// logs, per package, the layout, the alias chosen or how the candidates
// differ (GITASO_ASO_PKG narrows it to matching group/versions).
func TestRemovedPackagesFromTags(t *testing.T) {
	gitDir, shared := os.Getenv("GITASO_ASO_GIT"), os.Getenv("GITASO_SHARED")
	if gitDir == "" || shared == "" {
		t.Skip("GITASO_ASO_GIT and GITASO_SHARED not set (development check against ASO's release tags)")
	}
	repo, err := OpenRepo(gitDir)
	if err != nil {
		t.Fatal(err)
	}
	var rf struct{ Removed []RemovedEntry }
	b, err := os.ReadFile("../../catalog/removed.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rf); err != nil {
		t.Fatal(err)
	}
	cur := &Current{Packages: map[string]*SchemaFile{}}
	files, _ := filepath.Glob(filepath.Join(shared, "aso-schema/schema/*/*.json"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		s, err := DecodeSchemaFile(b)
		if err != nil {
			t.Fatal(err)
		}
		cur.Packages[s.Group+"/"+s.CRDVersion] = s
	}
	kb, _ := os.ReadFile(filepath.Join(shared, "aso-schema/kinds.json"))
	json.Unmarshal(kb, &cur.Kinds)
	var only []RemovedEntry
	for _, e := range rf.Removed {
		if f := os.Getenv("GITASO_ASO_PKG"); f == "" || strings.Contains(e.Group+"/"+e.Version, f) {
			only = append(only, e)
		}
	}
	ps, err := RemovedPackages(repo, only, cur, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Logf("%s/%s %s legacy=%v schemaOf=%q kinds=%d differs=%q", p.Group, p.Version, p.LastIn, p.Legacy, p.SchemaOf, len(p.Kinds), p.Differs)
	}
}
