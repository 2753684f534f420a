package charts_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/source/charts"
)

// A chart from an SSH GitRepository: the key and the server's host key
// come from the secretRef as source-controller reads them (identity,
// known_hosts), against an in-process SSH server running git-upload-pack.
// A wrong host key, a key the server refuses and a secret without
// known_hosts are errors. It was refused as unsupported (issue 25).
func TestGitRepositoryChartSSH(t *testing.T) {
	sshPub, identity := gittest.NewClientKey(t)

	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("charts")
	commit := repo.Commit(map[string]string{
		"charts/app/Chart.yaml":        "apiVersion: v2\nname: app\nversion: 2.0.0\n",
		"charts/app/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n",
	}, nil, "app")
	sshSrv := gittest.NewSSHServer(t, srv, sshPub)
	f := newFetcher(t, nil, nil)
	src := func(u string) charts.Source {
		return charts.Source{Kind: "GitRepository", Namespace: "flux-system", Name: "charts",
			Spec: map[string]any{"url": u, "ref": map[string]any{"branch": repo.Branch()}}}
	}
	secret := charts.Secret{"identity": identity, "known_hosts": sshSrv.KnownHosts()}
	c, err := f.Fetch(bg, charts.Request{Source: src(sshSrv.URL(repo)), Secret: secret, Chart: "charts/app"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "app" || c.Version != "2.0.0" || !strings.Contains(c.URL, "@"+commit+":charts/app") {
		t.Errorf("got %s %s from %s", c.Name, c.Version, c.URL)
	}

	// Another server's host key under the same address: refused.
	other := gittest.NewSSHServer(t, srv, sshPub)
	wrongHost := strings.Replace(other.KnownHosts(), hostOf(other.URL(repo)), hostOf(sshSrv.URL(repo)), 1)
	if _, err := newFetcher(t, nil, nil).Fetch(bg, charts.Request{Source: src(sshSrv.URL(repo)), Chart: "charts/app",
		Secret: charts.Secret{"identity": identity, "known_hosts": wrongHost}}); err == nil {
		t.Error("a host key not in known_hosts was accepted")
	}
	// A key the server does not know.
	_, priv2, _ := ed25519.GenerateKey(rand.Reader)
	block2, _ := ssh.MarshalPrivateKey(priv2, "")
	if _, err := newFetcher(t, nil, nil).Fetch(bg, charts.Request{Source: src(sshSrv.URL(repo)), Chart: "charts/app",
		Secret: charts.Secret{"identity": string(pem.EncodeToMemory(block2)), "known_hosts": sshSrv.KnownHosts()}}); err == nil {
		t.Error("a key the server refuses was accepted")
	}
	// No known_hosts: never trusted on first use.
	if _, err := newFetcher(t, nil, nil).Fetch(bg, charts.Request{Source: src(sshSrv.URL(repo)), Chart: "charts/app",
		Secret: charts.Secret{"identity": identity}}); !errors.Is(err, charts.ErrAuth) || !strings.Contains(err.Error(), "known_hosts") {
		t.Errorf("without known_hosts: %v", err)
	}
}

// hostOf is the "[host]:port" known_hosts form of an ssh:// URL's address.
func hostOf(u string) string {
	hp := strings.TrimPrefix(u, "ssh://git@")
	hp = hp[:strings.Index(hp, "/")]
	i := strings.LastIndex(hp, ":")
	return "[" + hp[:i] + "]:" + hp[i+1:]
}
