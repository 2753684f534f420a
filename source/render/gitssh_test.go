package render

import (
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// TestFluxSSHGitRepository: a Kustomization whose sourceRef is an SSH
// GitRepository (ssh://, and the scp-like git@host:path is the same code)
// is read with the secretRef's identity and known_hosts, as
// source-controller reads them, from a real SSH server running
// git-upload-pack; without known_hosts the unit fails (ArtifactFailed),
// never trusting a host on first use. It was refused as unsupported.
func TestFluxSSHGitRepository(t *testing.T) {
	sshPub, identity := gittest.NewClientKey(t)
	srv := gittest.NewServer(t)
	other := srv.CreateRepo("team-infra")
	other.Commit(map[string]string{"apps/rg.yaml": rg("over-ssh")}, nil, "first")
	sshSrv := gittest.NewSSHServer(t, srv, sshPub)
	repo := func(knownHosts string) string {
		secret := "  identity: |\n" + indent(identity, "    ")
		if knownHosts != "" {
			secret += "  known_hosts: |\n" + indent(strings.TrimRight(knownHosts, "\n")+"\n", "    ")
		}
		return writeRepo(t, map[string]string{
			"clusters/c/source.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: team-infra\n  namespace: flux-system\nspec:\n  url: " +
				sshSrv.URL(other) + "\n  ref:\n    branch: " + other.Branch() + "\n  secretRef:\n    name: team-infra-ssh\n---\n" +
				"apiVersion: v1\nkind: Secret\nmetadata:\n  name: team-infra-ssh\n  namespace: flux-system\nstringData:\n" + secret,
			"clusters/c/apps.yaml": strings.Replace(fluxKustomizationDoc("apps", "./apps", "  targetNamespace: team-a\n"),
				"    name: flux-system\n", "    name: team-infra\n", 1),
		})
	}
	opts := Options{Repositories: Repositories(&source.Repositories{CacheDir: t.TempDir()}), RepositoryURL: "https://git.example/platform.git"}
	snap, err := fluxFetch(t, repo(sshSrv.KnownHosts()), "clusters/c", opts)
	if err != nil {
		t.Fatal(err)
	}
	find(t, snap, "team-a/ResourceGroup/over-ssh")
	for _, u := range snap.Units {
		if u.Failed() {
			t.Errorf("unit %s failed: %s", u.ID(), u.Message)
		}
	}
	snap, err = fluxFetch(t, repo(""), "clusters/c", Options{Repositories: Repositories(&source.Repositories{}), RepositoryURL: "https://git.example/platform.git"})
	if _, err := failedUnit(t, snap, err, "Kustomization/flux-system/apps", manifest.ReasonArtifactFailed); err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("without known_hosts: %v", err)
	}
}
