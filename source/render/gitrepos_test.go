package render

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// TestFluxOtherGitRepository: a Kustomization whose sourceRef is a
// GitRepository of another URL renders that repository's path, read over
// real Git HTTPS with the secretRef's credentials; its objects name the
// mounted path; a new commit there is a new revision here; without a
// fetcher, or without the credentials, the Kustomization is refused.
func TestFluxOtherGitRepository(t *testing.T) {
	srv := gittest.NewServer(t, gittest.WithBasicAuth("reader", "pa55word"))
	other := srv.CreateRepo("team-infra")
	first := other.Commit(map[string]string{"apps/rg.yaml": rg("from-other")}, nil, "first")
	root := writeRepo(t, map[string]string{
		"clusters/c/source.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: team-infra
  namespace: flux-system
spec:
  url: ` + other.URL() + `
  ref:
    branch: ` + other.Branch() + `
  secretRef:
    name: team-infra-auth
---
apiVersion: v1
kind: Secret
metadata:
  name: team-infra-auth
  namespace: flux-system
stringData:
  username: reader
  password: pa55word
`,
		"clusters/c/apps.yaml": strings.Replace(fluxKustomizationDoc("apps", "./apps", "  targetNamespace: team-a\n"),
			"    name: flux-system\n", "    name: team-infra\n", 1),
	})
	repos := &source.Repositories{CABundle: srv.CABundle(), CacheDir: t.TempDir()}
	opts := Options{Repositories: Repositories(repos), RepositoryURL: "https://git.example/platform.git"}
	snap, err := fluxFetch(t, root, "clusters/c", opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"flux-system/Secret/team-infra-auth", "team-a/ResourceGroup/from-other"}, ids(snap.Objects)); diff != "" {
		t.Fatalf("objects (-want +got):\n%s", diff)
	}
	o := find(t, snap, "team-a/ResourceGroup/from-other")
	if !strings.HasPrefix(o.File, ".gitaso/git/flux-system/team-infra/apps/") {
		t.Errorf("object from %s, want the mounted path", o.File)
	}
	if len(snap.External) != 1 || snap.External[0].Digest != first || snap.External[0].Kind != "GitRepository" {
		t.Errorf("external sources %+v, want the other repository at %s", snap.External, first)
	}
	rev1 := snap.Revision
	second := other.Commit(map[string]string{"apps/rg.yaml": rg("from-other") + "  tags:\n    v: \"2\"\n"}, nil, "second")
	snap, err = fluxFetch(t, root, "clusters/c", opts)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Revision == rev1 || snap.External[0].Digest != second {
		t.Errorf("a new commit in the other repository: revision %s (was %s), external %+v", snap.Revision, rev1, snap.External)
	}
	// Refused without a fetcher, and with wrong credentials.
	snap, err = fluxFetch(t, root, "clusters/c", Options{RepositoryURL: "https://git.example/platform.git"})
	if _, err := failedUnit(t, snap, err, "Kustomization/flux-system/apps", manifest.ReasonArtifactFailed); err == nil || !strings.Contains(err.Error(), "another repository") {
		t.Errorf("without a fetcher: %v", err)
	}
	bad := writeRepo(t, map[string]string{
		"clusters/c/source.yaml": strings.Replace(readFile(t, root, "clusters/c/source.yaml"), "pa55word", "wrong", 1),
		"clusters/c/apps.yaml":   readFile(t, root, "clusters/c/apps.yaml"),
	})
	snap, err = fluxFetch(t, bad, "clusters/c", Options{RepositoryURL: "https://git.example/platform.git", Repositories: Repositories(&source.Repositories{CABundle: srv.CABundle()})})
	if u, err := failedUnit(t, snap, err, "Kustomization/flux-system/apps", manifest.ReasonArtifactFailed); err == nil || u.Retry {
		t.Errorf("wrong credentials were accepted (or are retried without a new commit: %v): %v", u.Retry, err)
	}
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
