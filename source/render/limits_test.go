package render

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/harness/hostile"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/source"
)

// The alias bomb and the heap guard live in harness/hostile.
var (
	bomb609     = hostile.Bomb609
	guardMemory = hostile.GuardMemory
)

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// wantLimit checks that err refuses the revision with one error naming
// file and the limit.
func wantLimit(t *testing.T, err error, file, limit string) {
	t.Helper()
	l := diag.AsList(err)
	if len(l) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	var le *source.LimitError
	if l[0].File != file || !errors.As(l[0], &le) || le.Limit != limit || !errors.Is(l[0], source.ErrLimit) ||
		!strings.HasPrefix(l[0].Error(), file+":") || !strings.Contains(l[0].Error(), "limit "+limit+"=") {
		t.Errorf("want an error naming %s and limit %s, got %v", file, limit, l[0])
	}
}

const kustomization = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- bomb.yaml\n"

// TestKustomizeAliasBomb: the bomb listed in a kustomization.yaml never
// reaches kustomize (whose kyaml expands every alias: 4.5 GB and more).
func TestKustomizeAliasBomb(t *testing.T) {
	guardMemory(t, 512<<20)
	for name, files := range map[string]map[string]string{
		"resource": {"app/kustomization.yaml": kustomization, "app/bomb.yaml": bomb609},
		"kustomization": {"app/kustomization.yaml": strings.Replace(bomb609, "apiVersion: v1\nkind: ConfigMap",
			"apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization", 1)},
		"recursive": {"app/kustomization.yaml": kustomization, "app/bomb.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: &d {a: *d}\n"},
	} {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, files)
			_, err := fetch(t, root, "", DefaultOptions())
			var rerr *source.RevisionError
			if !errors.As(err, &rerr) {
				t.Fatalf("want a *source.RevisionError, got %T %v", err, err)
			}
			if name == "recursive" {
				if l := diag.AsList(err); len(l) != 1 || l[0].File != "app/bomb.yaml" || !strings.Contains(l[0].Msg, "refers to the anchor it is part of") {
					t.Errorf("got %v", err)
				}
				return
			}
			file := "app/bomb.yaml"
			if name == "kustomization" {
				file = "app/kustomization.yaml"
			}
			wantLimit(t, err, file, "yaml-nodes")
		})
	}
}

// TestSOPSAliasBomb: the bomb in an encrypted file, outside or inside the
// sops stanza, is refused before decryption.
func TestSOPSAliasBomb(t *testing.T) {
	guardMemory(t, 512<<20)
	enc := readFixture(t, "secret.sops.yaml")
	bomb := bomb609[strings.Index(bomb609, "  a: &a"):strings.Index(bomb609, "  z: ")]
	inAnnotations := strings.Replace(enc, "    namespace: apps\n", "    namespace: apps\n    annotations:\n"+indent(bomb, "    "), 1)
	inStanza := strings.Replace(enc, "sops:\n", "sops:\n    kms:\n"+indent(bomb, "    "), 1)
	for name, text := range map[string]string{"annotations": inAnnotations, "stanza": inStanza} {
		t.Run(name, func(t *testing.T) {
			root := writeTree(t, map[string]string{"secrets/app.sops.yaml": text})
			_, err := fetch(t, root, "", Options{AgeIdentities: testIdentities(t, "test-only.agekey")})
			wantLimit(t, err, "secrets/app.sops.yaml", "yaml-nodes")
			// Even without the check, decryption does not expand aliases
			// (yaml.v3 refuses excessive aliasing in the stanza).
			if _, _, derr := decryptSOPS(text, testIdentities(t, "test-only.agekey")); derr == nil {
				t.Errorf("decryptSOPS accepted the bomb")
			}
		})
	}
}

func indent(s, prefix string) string {
	var b strings.Builder
	for l := range strings.Lines(s) {
		b.WriteString(prefix + l)
	}
	return b.String()
}

// TestSubstitutionAliasBomb: variables can write anchors and aliases into
// a document; the parser counts the rendered text with the same limits.
func TestSubstitutionAliasBomb(t *testing.T) {
	guardMemory(t, 512<<20)
	vars := map[string]string{"A": `&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]`}
	doc := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lol\ndata:\n  a: ${A}\n"
	prev := "a"
	for _, c := range "BCDEFGHI" {
		l := strings.ToLower(string(c))
		vars[string(c)] = fmt.Sprintf("&%s [%s]", l, strings.TrimSuffix(strings.Repeat("*"+prev+",", 9), ","))
		doc += fmt.Sprintf("  %s: ${%c}\n", l, c)
		prev = l
	}
	root := writeTree(t, map[string]string{"vars.yaml": doc})
	_, err := fetch(t, root, "", Options{Substitute: true, Vars: vars})
	wantLimit(t, err, "vars.yaml", "yaml-nodes")
}

// TestKustomizeObjectLimit: kustomize's build time grows with the square
// of the objects: a kustomization reaching too many is refused at once,
// with one error.
func TestKustomizeObjectLimit(t *testing.T) {
	docs := func(n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\n# object %d\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\ndata:\n  key: value-%d\n", i, i, i)
		}
		b.WriteString("---\n# trailing comment\n")
		return b.String()
	}
	n := 20_000
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml":      "resources:\n- many.yaml\n- base\n",
		"app/many.yaml":               docs(n),
		"app/base/kustomization.yaml": "resources:\n- one.yaml\n",
		"app/base/one.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n",
	})
	start := time.Now()
	_, err := fetch(t, root, "", DefaultOptions())
	wantLimit(t, err, "app/kustomization.yaml", "kustomize-objects")
	if !strings.Contains(err.Error(), fmt.Sprintf("hold %d documents", n+1)) {
		t.Errorf("error does not count the documents: %v", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("refusing took %v", d)
	}
	// Exactly the limit: built (a smaller repository, for time).
	root = writeTree(t, map[string]string{
		"app/kustomization.yaml": "resources:\n- many.yaml\n",
		"app/many.yaml":          docs(100),
	})
	opts := DefaultOptions()
	opts.Limits.MaxKustomizeObjects = 100
	snap, err := fetch(t, root, "", opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != 100 {
		t.Errorf("%d objects", len(snap.Objects))
	}
}

// TestKustomizeNodeLimit: kustomize keeps several copies of every node:
// the files one build reads are counted together, anchors or not.
func TestKustomizeNodeLimit(t *testing.T) {
	cms := func(prefix string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%d\ndata:\n  key: value\n", prefix, i)
		}
		return b.String()
	}
	// 50 ConfigMaps are 650 nodes.
	root := writeTree(t, map[string]string{
		"app/kustomization.yaml":      "resources:\n- a.yaml\n- base\n",
		"app/a.yaml":                  cms("a", 50),
		"app/base/kustomization.yaml": "resources:\n- b.yaml\n",
		"app/base/b.yaml":             cms("b", 50),
	})
	opts := DefaultOptions()
	opts.Limits.MaxNodes = 1000
	_, err := fetch(t, root, "", opts)
	wantLimit(t, err, "app/kustomization.yaml", "yaml-nodes")
	if !strings.Contains(err.Error(), "kustomization reaches hold more than 1000 YAML nodes together") {
		t.Errorf("error does not say what was counted: %v", err)
	}
	opts.Limits.MaxNodes = 600
	_, err = fetch(t, root, "", opts)
	wantLimit(t, err, "app/a.yaml", "yaml-nodes")
	opts.Limits.MaxNodes = 1300
	if snap, err := fetch(t, root, "", opts); err != nil || len(snap.Objects) != 100 {
		t.Errorf("within the limit: %v", err)
	}
}
