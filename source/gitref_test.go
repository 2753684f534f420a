package source_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/source"
)

// A pull request's head is followed like a branch (GitOptions.Ref): the
// forge keeps it under refs/pull/N/head, never under refs/heads.
func TestGitFollowsPullRequestRef(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		c := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	write("rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: a, namespace: ops}\nspec: {location: westeurope}\n")
	git("add", "-A")
	git("commit", "-qm", "main")
	main := git("rev-parse", "HEAD")
	git("checkout", "-qb", "feature")
	write("rg2.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: b, namespace: ops}\nspec: {location: westeurope}\n")
	git("add", "-A")
	git("commit", "-qm", "feature")
	head := git("rev-parse", "HEAD")
	git("update-ref", "refs/pull/7/head", head)
	git("checkout", "-q", "main")
	git("branch", "-D", "feature")

	for ref, want := range map[string]string{"refs/pull/7/head": head, "": main} {
		g, err := source.NewGit(source.GitOptions{URL: "file://" + dir, Ref: ref, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		snap, err := g.Fetch(context.Background())
		if err != nil {
			t.Fatalf("%q: %v", ref, err)
		}
		if snap.Revision != want {
			t.Errorf("ref %q: revision %s, want %s", ref, snap.Revision, want)
		}
	}
	if _, err := source.NewGit(source.GitOptions{URL: "file://" + dir, Ref: "pull/7/head"}); err == nil {
		t.Error("a reference outside refs/ was accepted")
	}
	g, _ := source.NewGit(source.GitOptions{URL: "file://" + dir, Ref: "refs/pull/8/head"})
	if _, err := g.Fetch(context.Background()); err == nil || !strings.Contains(err.Error(), "pull/8/head") {
		t.Errorf("a missing pull request ref: %v", err)
	}
}
