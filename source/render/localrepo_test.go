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

func gitRepositoryDoc(name, url string) string {
	return "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: " + name +
		"\n  namespace: flux-system\nspec:\n  url: " + url + "\n"
}

func kustomizationFrom(name, path, repo string) string {
	return strings.Replace(fluxKustomizationDoc(name, path, ""), "    name: flux-system\n", "    name: "+repo+"\n", 1)
}

// With a local-path --repo, only a GitRepository naming that path (or its
// file:// URL) is this repository; one on a Git server is read from there,
// and an ssh:// one on another host is another repository too. Before,
// a local --repo gave no URL to compare and every GitRepository was taken
// for this repository: its Kustomization built this repository's ./apps.
func TestFluxLocalRepoIsOnlyItself(t *testing.T) {
	srv := gittest.NewServer(t)
	team := srv.CreateRepo("team")
	team.Commit(map[string]string{"apps/rg.yaml": rg("from-team-server")}, nil, "team")
	files := map[string]string{
		"apps/rg.yaml":       rg("local-copy"),
		"mine/rg.yaml":       rg("mine"),
		"clusters/c/ks.yaml": kustomizationFrom("team", "./apps", "team") + "---\n" + kustomizationFrom("self", "./mine", "self"),
	}
	root := writeRepo(t, files)
	writeAt(t, root, "clusters/c/src.yaml", gitRepositoryDoc("team", team.URL()+"\n  ref:\n    branch: "+team.Branch())+"---\n"+gitRepositoryDoc("self", "file://"+root))
	opts := Options{RepositoryURL: root, Repositories: Repositories(&source.Repositories{CABundle: srv.CABundle()})}
	snap, err := fluxFetch(t, root, "clusters/c", opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/from-team-server", "default/ResourceGroup/mine"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	writeAt(t, root, "clusters/c/src.yaml", gitRepositoryDoc("team", "ssh://git@git.other.example/team.git")+"---\n"+gitRepositoryDoc("self", "file://"+root))
	snap, err = fluxFetch(t, root, "clusters/c", Options{RepositoryURL: root})
	if _, err := failedUnit(t, snap, err, "Kustomization/flux-system/team", manifest.ReasonArtifactFailed); err == nil || !strings.Contains(err.Error(), "GitRepository flux-system/team is git.other.example/team, another repository than the one gitaso reads") {
		t.Errorf("ssh:// on another host: %v", err)
	}

	// Flux's own flux-system/flux-system names the repository it was bootstrapped from: a local clone of it is
	// that repository, whatever URL it names.
	writeAt(t, root, "clusters/c/src.yaml", gitRepositoryDoc("flux-system", "ssh://git@github.example/org/fleet.git")+"---\n"+gitRepositoryDoc("self", "file://"+root))
	writeAt(t, root, "clusters/c/ks.yaml", kustomizationFrom("apps", "./apps", "flux-system")+"---\n"+kustomizationFrom("self", "./mine", "self"))
	snap, err = fluxFetch(t, root, "clusters/c", Options{RepositoryURL: root})
	if err != nil {
		t.Fatalf("flux-system/flux-system with a local clone: %v", err)
	}
	if diff := cmp.Diff([]string{"default/ResourceGroup/local-copy", "default/ResourceGroup/mine"}, ids(snap.Objects)); diff != "" {
		t.Errorf("flux-system/flux-system objects (-want +got):\n%s", diff)
	}
}

func writeAt(t *testing.T, root, rel, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
