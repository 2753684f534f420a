package source

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/manifest"
)

const benchFiles = 5000

var quiet = slog.New(slog.DiscardHandler)

// benchManifests returns benchFiles realistic manifests in 50 namespaces:
// storage accounts with containers, identities, config maps and secrets.
func benchManifests() map[string]string {
	files := make(map[string]string, benchFiles)
	for i := range benchFiles {
		ns := fmt.Sprintf("team-%02d", i%50)
		var body string
		switch i % 4 {
		case 0:
			body = fmt.Sprintf(`# storage for service %[1]d
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: sa%[1]d
  namespace: %[2]s
  annotations:
    serviceoperator.azure.com/reconcile-policy: manage
spec:
  location: westeurope
  kind: StorageV2
  sku:
    name: Standard_LRS
  owner:
    name: rg-%[2]s
  accessTier: Hot
  minimumTlsVersion: TLS1_2
  networkAcls:
    defaultAction: Deny
    ipRules:
    - value: 10.0.0.%[3]d
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccountsBlobServicesContainer
metadata:
  name: sa%[1]d-data
  namespace: %[2]s
spec:
  owner:
    name: sa%[1]d-blob
  publicAccess: None
`, i, ns, i%250)
		case 1:
			body = fmt.Sprintf(`apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: id%[1]d
  namespace: %[2]s
spec:
  location: westeurope
  owner:
    name: rg-%[2]s
  operatorSpec:
    configMaps:
      principalId: {name: id%[1]d-settings, key: principalId}
      clientId: {name: id%[1]d-settings, key: clientId}
`, i, ns)
		case 2:
			body = fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: cm%[1]d
  namespace: %[2]s
data:
  region: westeurope
  tier: "gold"
  replicas: "3"
`, i, ns)
		case 3:
			body = fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: s%[1]d
  namespace: %[2]s
stringData:
  password: hunter%[1]d
data:
  user: YWRtaW4=
`, i, ns)
		}
		files[fmt.Sprintf("clusters/prod/%s/svc-%04d.yaml", ns, i)] = body
	}
	return files
}

// reportLive reports the live heap (after a GC) while snap is reachable: what
// holding one snapshot (and the Git parse cache) costs.
func reportLive(b *testing.B, snap *manifest.Snapshot) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapAlloc)/(1<<20), "MB_live")
	runtime.KeepAlive(snap)
}

func inputMB(files map[string]string) float64 {
	n := 0
	for _, s := range files {
		n += len(s)
	}
	return float64(n) / (1 << 20)
}

// BenchmarkDir5000 reads and parses 5,000 files from a directory.
func BenchmarkDir5000(b *testing.B) {
	files := benchManifests()
	root := b.TempDir()
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	d := NewDir(root, "clusters")
	ctx := context.Background()
	b.ReportAllocs()
	var snap *manifest.Snapshot
	for b.Loop() {
		var err error
		snap, err = d.Fetch(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Objects) != benchFiles*5/4 {
			b.Fatalf("got %d objects", len(snap.Objects))
		}
	}
	b.ReportMetric(inputMB(files), "MB_input")
	reportLive(b, snap)
}

// BenchmarkGitRead5000 reads and parses the 5,000 files of a commit from the
// on-disk bare cache with nothing parsed before (a Fetch after a restart).
func BenchmarkGitRead5000(b *testing.B) {
	files := benchManifests()
	srv := gittest.NewServer(b)
	repo := srv.CreateRepo("bench")
	sha := repo.Commit(files, nil, "5000 files")
	g, err := NewGit(GitOptions{URL: repo.Dir(), CacheDir: b.TempDir(), Path: "clusters", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Fetch(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var snap *manifest.Snapshot
	for b.Loop() {
		g.parsed = nil // cold: read and parse every file
		snap, err = g.snapshotAt(ctx, plumbing.NewHash(sha))
		if err != nil {
			b.Fatal(err)
		}
		if len(snap.Objects) != benchFiles*5/4 {
			b.Fatalf("got %d objects", len(snap.Objects))
		}
	}
	b.ReportMetric(inputMB(files), "MB_input")
	reportLive(b, snap)
}

// BenchmarkGitIncremental5000 reads a commit that changed one file of 5,000
// (the usual poll after a small commit): tree walk, one blob, one parse,
// deep copies of the other objects.
func BenchmarkGitIncremental5000(b *testing.B) {
	files := benchManifests()
	srv := gittest.NewServer(b)
	repo := srv.CreateRepo("bench")
	shaA := repo.Commit(files, nil, "5000 files")
	g, err := NewGit(GitOptions{URL: repo.Dir(), CacheDir: b.TempDir(), Path: "clusters", Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Fetch(ctx); err != nil {
		b.Fatal(err)
	}
	shaB := repo.Commit(map[string]string{"clusters/prod/team-02/svc-0002.yaml": strings.Replace(files["clusters/prod/team-02/svc-0002.yaml"], "gold", "silver", 1)}, nil, "one change")
	if snap, err := g.Fetch(ctx); err != nil || snap.Revision != shaB {
		b.Fatal(snap, err)
	}
	revs := []plumbing.Hash{plumbing.NewHash(shaB), plumbing.NewHash(shaA)}
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.snapshotAt(ctx, revs[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkGitClone5000 is the first Fetch of a 5,000-file branch over HTTPS
// into an empty on-disk cache (shallow clone, read, parse).
func BenchmarkGitClone5000(b *testing.B) {
	files := benchManifests()
	srv := gittest.NewServer(b)
	repo := srv.CreateRepo("bench")
	repo.Commit(files, nil, "5000 files")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle(), CacheDir: b.TempDir(), Path: "clusters", Logger: quiet})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := g.Fetch(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitFetchUnchanged is a poll of an unchanged branch over HTTPS
// (one ref advertisement, cached snapshot).
func BenchmarkGitFetchUnchanged(b *testing.B) {
	srv := gittest.NewServer(b)
	repo := srv.CreateRepo("bench")
	repo.Commit(map[string]string{"rg.yaml": rgYAML}, nil, "first")
	g, err := NewGit(GitOptions{URL: repo.URL(), CABundle: srv.CABundle(), CacheDir: b.TempDir(), Logger: quiet})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := g.Fetch(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := g.Fetch(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseFile parses one typical manifest.
func BenchmarkParseFile(b *testing.B) {
	data := []byte(benchManifests()["clusters/prod/team-00/svc-0000.yaml"])
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ParseFile("f.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}
