package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tree is the made-up ASO-shaped source tree of package asosrc's tests.
const tree = "asosrc/testdata/kinds"

const (
	commit = "0123456789abcdef0123456789abcdef01234567"
	when   = "2026-01-02T03:04:05+00:00"
)

func catalogFiles(t *testing.T, out string) (cat, pkgs []byte) {
	t.Helper()
	cat, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pkgs, err = os.ReadFile(filepath.Join(filepath.Dir(out), "packages.bin"))
	if err != nil {
		t.Fatal(err)
	}
	return cat, pkgs
}

func provenance(t *testing.T, out string) provenanceOut {
	t.Helper()
	cat, _ := catalogFiles(t, out)
	zr, err := gzip.NewReader(bytes.NewReader(cat))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var c catalogOut
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Provenance
}

// TestASOSourceEqualsFactsDir: the catalog made from ASO's source tree is
// byte for byte the catalog made from the facts files the extraction
// writes (-facts-out), so -aso-src and -schema are the same generator with
// two inputs; and a second run keeps the generation date of an unchanged
// catalog.
func TestASOSourceEqualsFactsDir(t *testing.T) {
	tmp := t.TempDir()
	facts := filepath.Join(tmp, "facts")
	fromSrc := filepath.Join(tmp, "src", "catalog.json.gz")
	fromDir := filepath.Join(tmp, "dir", "catalog.json.gz")
	if err := run([]string{"-aso-src", tree, "-aso-commit", commit, "-aso-commit-date", when,
		"-facts-out", facts, "-out", fromSrc, "-date", "2026-02-03"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kinds.json", "provenance.json", "exceptions.json", "schema/toy.azure.com/v1api20240101.json"} {
		if _, err := os.Stat(filepath.Join(facts, filepath.FromSlash(f))); err != nil {
			t.Errorf("-facts-out: %v", err)
		}
	}
	if err := run([]string{"-schema", facts, "-out", fromDir, "-date", "2026-02-03"}); err != nil {
		t.Fatal(err)
	}
	c1, p1 := catalogFiles(t, fromSrc)
	c2, p2 := catalogFiles(t, fromDir)
	if !bytes.Equal(c1, c2) || !bytes.Equal(p1, p2) {
		t.Error("the catalog from the source tree differs from the one from its facts files")
	}
	p := provenance(t, fromSrc)
	if p.Commit != commit || p.CommitDate != when || p.Source != "https://github.com/Azure/azure-service-operator" ||
		p.License != "MIT" || p.Kinds != 7 || p.ConvertKinds != 6 || p.Packages != 2 || p.GeneratedAt != "2026-02-03" {
		t.Errorf("provenance %+v", p)
	}

	// No -date: the facts are unchanged, so the catalog is too.
	if err := run([]string{"-aso-src", tree, "-aso-commit", commit, "-aso-commit-date", when, "-out", fromSrc}); err != nil {
		t.Fatal(err)
	}
	if c3, p3 := catalogFiles(t, fromSrc); !bytes.Equal(c1, c3) || !bytes.Equal(p1, p3) {
		t.Error("regenerating from unchanged facts changed the catalog")
	}
	// Other facts (another commit): today's date.
	other := strings.Replace(commit, "0123", "4567", 1)
	if err := run([]string{"-aso-src", tree, "-aso-commit", other, "-aso-commit-date", when, "-out", fromSrc}); err != nil {
		t.Fatal(err)
	}
	if p := provenance(t, fromSrc); p.Commit != other || p.GeneratedAt != time.Now().UTC().Format("2006-01-02") {
		t.Errorf("changed facts: provenance %+v", p)
	}
}

// TestASOSourceFromGit reads the tree from a Git repository (make
// aso-catalog ASO_SRC=<ASO git dir>): commit and date come from the commit,
// and the catalog is the one made from a copy of the tree given the same.
func TestASOSourceFromGit(t *testing.T) {
	repo, head := gitTree(t)
	tmp := t.TempDir()
	bare := filepath.Join(tmp, "aso.git")
	gitIn(t, tmp, "clone", "-q", "--bare", repo, bare)
	fromGit := filepath.Join(tmp, "git", "catalog.json.gz")
	if err := run([]string{"-aso-src", bare, "-aso-ref", "main", "-removed", "", "-out", fromGit, "-date", "2026-02-03"}); err != nil {
		t.Fatal(err)
	}
	if p := provenance(t, fromGit); p.Commit != head || p.CommitDate != "2026-01-02T03:04:05+01:00" {
		t.Errorf("provenance %+v, want commit %s", p, head)
	}
	// A checkout: the work tree is read, and git gives commit and date.
	fromCheckout := filepath.Join(tmp, "checkout", "catalog.json.gz")
	if err := run([]string{"-aso-src", repo, "-aso-ref", head, "-removed", "", "-out", fromCheckout, "-date", "2026-02-03"}); err != nil {
		t.Fatal(err)
	}
	// A plain copy with the Git directory it came from.
	fromCopy := filepath.Join(tmp, "copy", "catalog.json.gz")
	if err := run([]string{"-aso-src", tree, "-aso-git", bare, "-aso-ref", "main", "-removed", "", "-out", fromCopy, "-date", "2026-02-03"}); err != nil {
		t.Fatal(err)
	}
	c1, p1 := catalogFiles(t, fromGit)
	for _, out := range []string{fromCheckout, fromCopy} {
		if c, p := catalogFiles(t, out); !bytes.Equal(c, c1) || !bytes.Equal(p, p1) {
			t.Errorf("%s differs from the catalog read from Git", out)
		}
	}
	if err := run([]string{"-aso-src", bare, "-aso-ref", "main", "-aso-commit", commit, "-out", fromGit}); err == nil ||
		!strings.Contains(err.Error(), "-aso-commit "+commit) {
		t.Errorf("a commit that is not the ref's: error %v", err)
	}
}

// TestASOSourceErrors: the provenance must name what was read.
func TestASOSourceErrors(t *testing.T) {
	repo, head := gitTree(t)
	out := filepath.Join(t.TempDir(), "catalog.json.gz")
	gitIn(t, repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "next")
	cases := []struct {
		name string
		args []string
		want string
	}{
		// The copy is inside this repository: its commit is not ASO's.
		{"a plain copy without its commit", []string{"-aso-src", tree, "-out", out}, "not a Git checkout"},
		{"a checkout at another commit than the ref", []string{"-aso-src", repo, "-aso-ref", head, "-out", out}, "is a checkout at"},
		{"facts-out without aso-src", []string{"-facts-out", t.TempDir(), "-out", out}, "-facts-out needs -aso-src"},
		{"not ASO", []string{"-aso-src", t.TempDir(), "-out", out}, "read as a Git repository"},
	}
	for _, c := range cases {
		err := run(c.args)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a catalog was written")
	}
}

// gitTree commits a copy of the made-up tree to a new repository on main.
func gitTree(t *testing.T) (string, string) {
	t.Helper()
	dir := t.TempDir()
	err := fs.WalkDir(os.DirFS(tree), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, "want/") {
			return err
		}
		b, err := fs.ReadFile(os.DirFS(tree), p)
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
	gitIn(t, dir, "init", "-q", "-b", "main")
	gitIn(t, dir, "add", ".")
	gitIn(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "tree")
	return dir, gitIn(t, dir, "rev-parse", "HEAD")
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_DATE=2026-01-02T03:04:05+01:00", "GIT_COMMITTER_DATE=2026-01-02T03:04:05+01:00")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestCatalogFromASOSource is the check of `make aso-catalog`: with
// GITASO_ASO_SRC set to ASO's Git directory (or a copy of its tree, with
// GITASO_ASO_GIT naming the Git directory) it regenerates the catalog from
// ASO's source at the commit the committed catalog names and compares it
// byte for byte with aso/catalog.
func TestCatalogFromASOSource(t *testing.T) {
	src := os.Getenv("GITASO_ASO_SRC")
	if src == "" {
		t.Skip("GITASO_ASO_SRC not set (a check against ASO's source, see docs/aso-upgrade.md)")
	}
	committed := "../catalog/catalog.json.gz"
	p := provenance(t, committed)
	out := filepath.Join(t.TempDir(), "catalog.json.gz")
	args := []string{"-aso-src", src, "-aso-ref", p.Commit, "-out", out, "-date", p.GeneratedAt,
		"-removed", "../catalog/removed.json"} // the removed versions, read at their release tags (needs a Git directory)
	if g := os.Getenv("GITASO_ASO_GIT"); g != "" {
		args = append(args, "-aso-git", g)
	}
	start := time.Now()
	if err := run(args); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated in %s", time.Since(start).Round(time.Millisecond))
	c1, p1 := catalogFiles(t, committed)
	c2, p2 := catalogFiles(t, out)
	if !bytes.Equal(c1, c2) {
		t.Errorf("catalog.json.gz differs from the committed one: %+v", provenance(t, out))
	}
	if !bytes.Equal(p1, p2) {
		t.Error("packages.bin differs from the committed one")
	}
}
