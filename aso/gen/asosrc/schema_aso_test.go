package asosrc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestSchemaMatchesShared is a development check: with GITASO_ASO_SRC set to
// an ASO source tree at the pinned commit and GITASO_SHARED to ../shared, it
// extracts every API package and compares the result byte for byte with
// ../shared/aso-schema/schema/<group>/<version>.json, reporting the first
// differing types and fields of each package.
func TestSchemaMatchesShared(t *testing.T) {
	src, shared := os.Getenv("GITASO_ASO_SRC"), os.Getenv("GITASO_SHARED")
	if src == "" || shared == "" {
		t.Skip("GITASO_ASO_SRC and GITASO_SHARED not set (development check against ASO's source tree)")
	}
	pkgs, err := Packages(src)
	if err != nil {
		t.Fatal(err)
	}
	only := os.Getenv("GITASO_ASO_PKG")
	start := time.Now()
	identical, compared := 0, 0
	var files []*SchemaFile
	for _, p := range pkgs {
		if only != "" && !strings.Contains(p[0]+"/"+p[1], only) {
			continue
		}
		compared++
		want, err := os.ReadFile(filepath.Join(shared, "aso-schema", "schema", p[0], p[1]+".json"))
		if err != nil {
			t.Errorf("%s/%s: %v", p[0], p[1], err)
			continue
		}
		s, err := Schema(src, p[0], p[1])
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		files = append(files, s)
		got, _ := s.MarshalJSON()
		got = append(got, '\n')
		if bytes.Equal(got, want) {
			identical++
			continue
		}
		t.Errorf("%s/%s differs:\n%s", p[0], p[1], describeDiff(got, want))
	}
	t.Logf("%d of %d packages identical (%s)", identical, compared, time.Since(start).Round(time.Millisecond))
	if only != "" {
		return
	}
	want, err := os.ReadFile(filepath.Join(shared, "aso-schema", "exceptions.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := Exceptions(files).MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range max(len(gl), len(wl)) {
			var g, w string
			if i < len(gl) {
				g = gl[i]
			}
			if i < len(wl) {
				w = wl[i]
			}
			if g != w {
				t.Errorf("exceptions.json line %d:\n got  %s\n want %s", i+1, truncBytes([]byte(g)), truncBytes([]byte(w)))
			}
		}
	} else {
		t.Log("exceptions.json identical")
	}
}

// describeDiff names the types and fields that differ between two schema
// files (at most a few lines), or the first differing byte if both decode
// to the same value (an order difference).
func describeDiff(got, want []byte) string {
	var g, w map[string]any
	if err := json.Unmarshal(got, &g); err != nil {
		return "got is not JSON: " + err.Error()
	}
	_ = json.Unmarshal(want, &w)
	var lines []string
	add := func(format string, a ...any) {
		if len(lines) < 12 {
			lines = append(lines, fmt.Sprintf(format, a...))
		}
	}
	for _, k := range []string{"group", "crdVersion", "armApiVersion"} {
		if fmt.Sprint(g[k]) != fmt.Sprint(w[k]) {
			add("%s: got %v want %v", k, g[k], w[k])
		}
	}
	cmpMaps := func(section string, gm, wm map[string]any, inner bool) {
		keys := map[string]bool{}
		for k := range gm {
			keys[k] = true
		}
		for k := range wm {
			keys[k] = true
		}
		var ks []string
		for k := range keys {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			gv, gok := gm[k]
			wv, wok := wm[k]
			switch {
			case !gok:
				add("%s %s: missing", section, k)
			case !wok:
				add("%s %s: extra", section, k)
			default:
				gb, _ := json.Marshal(gv)
				wb, _ := json.Marshal(wv)
				if bytes.Equal(gb, wb) {
					continue
				}
				gt, _ := gv.(map[string]any)
				wt, _ := wv.(map[string]any)
				if inner && gt != nil && wt != nil {
					gf, _ := gt["f"].(map[string]any)
					wf, _ := wt["f"].(map[string]any)
					for fk, fv := range wf {
						a, _ := json.Marshal(gf[fk])
						b, _ := json.Marshal(fv)
						if !bytes.Equal(a, b) {
							add("%s %s.%s: got %s want %s", section, k, fk, a, b)
						}
					}
					for fk := range gf {
						if _, ok := wf[fk]; !ok {
							add("%s %s.%s: extra", section, k, fk)
						}
					}
					for _, tk := range []string{"arm", "oneOf", "name", "pushName", "prec", "emptyIfNil", "ctr"} {
						a, _ := json.Marshal(gt[tk])
						b, _ := json.Marshal(wt[tk])
						if !bytes.Equal(a, b) {
							add("%s %s %s: got %s want %s", section, k, tk, a, b)
						}
					}
					continue
				}
				add("%s %s: got %s want %s", section, k, truncBytes(gb), truncBytes(wb))
			}
		}
	}
	gk, _ := g["kinds"].(map[string]any)
	wk, _ := w["kinds"].(map[string]any)
	cmpMaps("kind", gk, wk, false)
	gt, _ := g["types"].(map[string]any)
	wt, _ := w["types"].(map[string]any)
	cmpMaps("type", gt, wt, true)
	ga, _ := g["armTypes"].(map[string]any)
	wa, _ := w["armTypes"].(map[string]any)
	cmpMaps("armType", ga, wa, false)
	if len(lines) == 0 {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		lo := max(0, i-80)
		lines = append(lines, fmt.Sprintf("same values, different order at byte %d:\n got  …%s\n want …%s",
			i, got[lo:min(len(got), i+80)], want[lo:min(len(want), i+80)]))
	}
	return strings.Join(lines, "\n")
}

func truncBytes(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}
