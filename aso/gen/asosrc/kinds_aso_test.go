package asosrc

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestKindsMatchShared is a development check: with GITASO_ASO_SRC set to an
// ASO source tree at the pinned commit and GITASO_SHARED to ../shared, it
// reads the kinds and compares kinds.json and provenance.json byte for byte
// with ../shared/aso-schema, reporting each entry that differs field by field.
func TestKindsMatchShared(t *testing.T) {
	src, shared := os.Getenv("GITASO_ASO_SRC"), os.Getenv("GITASO_SHARED")
	if src == "" || shared == "" {
		t.Skip("GITASO_ASO_SRC and GITASO_SHARED not set (development check against ASO's source tree)")
	}
	start := time.Now()
	res, err := Kinds(src)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d kinds in %s; warnings: %q", len(res.Kinds), time.Since(start).Round(time.Millisecond), res.Warnings)
	got := KindsJSON(res.Kinds)
	want, err := os.ReadFile(filepath.Join(shared, "aso-schema", "kinds.json"))
	if err != nil {
		t.Fatal(err)
	}
	checkProvenance(t, shared, res)
	if !bytes.Equal(got, want) {
		var g, w []map[string]any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("kinds.json written is not JSON: %v", err)
		}
		if err := json.Unmarshal(want, &w); err != nil {
			t.Fatal(err)
		}
		key := func(m map[string]any) string {
			return m["group"].(string) + " " + m["crdVersion"].(string) + " " + m["kind"].(string)
		}
		wk := map[string]map[string]any{}
		for _, m := range w {
			wk[key(m)] = m
		}
		same, shown := 0, 0
		for _, m := range g {
			o, ok := wk[key(m)]
			if !ok {
				t.Errorf("extra entry %s", key(m))
				continue
			}
			delete(wk, key(m))
			if reflect.DeepEqual(m, o) {
				same++
				continue
			}
			for f := range mergeKeys(m, o) {
				if !reflect.DeepEqual(m[f], o[f]) && shown < 60 {
					shown++
					t.Errorf("%s %s: got %v, want %v", key(m), f, m[f], o[f])
				}
			}
		}
		for k := range wk {
			t.Errorf("missing entry %s", k)
		}
		t.Errorf("kinds.json differs: %d of %d entries equal", same, len(w))
	}
}

func mergeKeys(a, b map[string]any) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// checkProvenance compares provenance.json with the shared one, given the
// shared one's source and commit (they come from git, not from the tree).
func checkProvenance(t *testing.T, shared string, res *KindsResult) {
	want, err := os.ReadFile(filepath.Join(shared, "aso-schema", "provenance.json"))
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Source, License, Commit, CommitDate string
		SchemaFiles                         int
	}
	if err := json.Unmarshal(want, &p); err != nil {
		t.Fatal(err)
	}
	got := ProvenanceJSON(Provenance{p.Source, p.License, p.Commit, p.CommitDate}, len(res.Kinds), p.SchemaFiles, res.Unlisted)
	if !bytes.Equal(got, want) {
		t.Errorf("provenance.json differs:\n%s\nwant:\n%s", got, want)
	}
}

// TestExtractAtReleases is a development check for older ASO releases: with
// GITASO_ASO_GIT set to ASO's Git directory and GITASO_ASO_TAGS to a list of
// tags (e.g. "v2.0.0 v2.11.0"), it extracts every fact of each tag's tree
// straight from Git and logs the kinds per status.
func TestExtractAtReleases(t *testing.T) {
	dir, tags := os.Getenv("GITASO_ASO_GIT"), strings.Fields(os.Getenv("GITASO_ASO_TAGS"))
	if dir == "" || len(tags) == 0 {
		t.Skip("GITASO_ASO_GIT and GITASO_ASO_TAGS not set (development check against ASO's releases)")
	}
	for _, tag := range tags {
		start := time.Now()
		fsys, commit, date, err := GitTree(dir, tag)
		if err != nil {
			t.Fatal(err)
		}
		f, err := ExtractFS(fsys, Provenance{Source: "aso", License: "MIT", Commit: commit, CommitDate: date})
		if err != nil {
			t.Errorf("%s: %v", tag, err)
			continue
		}
		var kinds []map[string]any
		if err := json.Unmarshal(f.Files["kinds.json"], &kinds); err != nil {
			t.Fatal(err)
		}
		status := map[string]int{}
		for _, k := range kinds {
			status[k["status"].(string)]++
		}
		t.Logf("%s (%.8s, %s): %d files, %d kinds %v, %d warnings, %s", tag, commit, date, len(f.Files), len(kinds), status,
			len(f.Warnings), time.Since(start).Round(time.Millisecond))
	}
}
