package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/internal/gittest"
)

// An SSH --repo is read with --git-ssh-key and --git-known-hosts from a real
// SSH server running git-upload-pack; without known_hosts it is refused
// before anything is fetched.
func TestRepoOverSSH(t *testing.T) {
	sshPub, identity := gittest.NewClientKey(t)
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("infra")
	repo.Commit(map[string]string{"rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  namespace: ops\nspec:\n  location: westeurope\n"}, nil, "first")
	sshSrv := gittest.NewSSHServer(t, srv, sshPub)
	dir := t.TempDir()
	key, hosts := filepath.Join(dir, "id"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(key, []byte(identity), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosts, []byte(sshSrv.KnownHosts()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := run(t, "validate", "--repo", sshSrv.URL(repo), "--branch", repo.Branch(), "--git-ssh-key", key, "--git-known-hosts", hosts)
	if err != nil || !strings.Contains(out, "1 resources valid") {
		t.Fatalf("validate over SSH: %v\n%s\n%s", err, out, stderr)
	}
	_, _, err = run(t, "validate", "--repo", sshSrv.URL(repo), "--branch", repo.Branch(), "--git-ssh-key", key)
	if err == nil || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("without --git-known-hosts: %v", err)
	}
}
