package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// An ASO-shaped repository: v2.0.0 has v1beta20210501 and v1api20210501 of
// ManagedCluster, v2.1.0 drops the beta, main drops v1api20210501 and adds
// v1api20230201 (and a pre-release tag that must be ignored).
func TestGenerate(t *testing.T) {
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Unix(1e9, 0)}
	commit := func(versions ...string) {
		t.Helper()
		os.RemoveAll(filepath.Join(dir, "v2"))
		for _, v := range versions {
			p := filepath.Join(dir, "v2/api/containerservice", v)
			if err := os.MkdirAll(filepath.Join(p, "arm"), 0o755); err != nil {
				t.Fatal(err)
			}
			src := "package " + v + "\n\nfunc (cluster *ManagedCluster) GetType() string {\n\treturn \"x\"\n}\n"
			arm := "package " + v + "\n\nfunc (cluster *ManagedCluster_Spec_ARM) GetType() string {\n\treturn \"x\"\n}\n"
			if err := os.WriteFile(filepath.Join(p, "managed_cluster_spec_arm_types_gen.go"), []byte(arm), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"managed_cluster_types_gen.go", "arm/managed_cluster_types_gen.go"} {
				if err := os.WriteFile(filepath.Join(p, f), []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(dir, "v2/api/containerservice", v+"storage"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "v2/api/containerservice", v+"storage", "x_types_gen.go"),
				[]byte("func (c *StorageOnly) GetType() string {"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Commit("c", &git.CommitOptions{Author: sig, All: true}); err != nil {
			t.Fatal(err)
		}
	}
	tag := func(name string) {
		t.Helper()
		h, err := repo.Head()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := repo.CreateTag(name, h.Hash(), nil); err != nil {
			t.Fatal(err)
		}
	}
	commit("v1beta20210501", "v1api20210501")
	tag("v2.0.0")
	commit("v1api20210501", "v1beta20210501x")
	tag("v2.1.0-beta.0")
	commit("v1api20210501")
	tag("v2.1.0")
	commit("v1api20230201")

	r, err := Open(filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	o, err := Generate(r, "", "test")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	head, _ := repo.Head()
	want := `{"generator":"go run ./aso/gen/removed","source":"test","license":"MIT","commit":"` + head.Hash().String() + `","releases":["v2.0.0","v2.1.0"],"removed":[
{"group":"containerservice.azure.com","version":"v1api20210501","kind":"ManagedCluster","lastIn":"v2.1.0","removedIn":"","replacements":["v1api20230201"]},
{"group":"containerservice.azure.com","version":"v1beta20210501","kind":"ManagedCluster","lastIn":"v2.0.0","removedIn":"v2.1.0","replacements":["v1api20230201"]}
]}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
