package migrate_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/migrate"
)

func TestWriteTree(t *testing.T) {
	q, err := migrate.Clean(decode(t, queueAsLeft), migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db, err := migrate.Clean(decode(t, `{"apiVersion": "dbforpostgresql.azure.com/v1api20240801", "kind": "FlexibleServer",
  "metadata": {"name": "pg", "namespace": "platform"},
  "spec": {"location": "uksouth", "owner": {"name": "rg"}, "administratorLogin": "pgadmin",
           "administratorLoginPassword": {"name": "pg-admin", "key": "password"}}}`), migrate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "repo")
	tree := &migrate.Tree{Objects: []*migrate.Object{q, db}, NamespaceCredentials: []string{"team-a"}, Header: "From the test."}
	if err := migrate.WriteTree(dir, tree); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	err = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kustomization.yaml", "IMPORT.md", "team-a/kustomization.yaml", "team-a/servicebus-namespacesqueue-team-a-orders.yaml",
		"platform/kustomization.yaml", "platform/dbforpostgresql-flexibleserver-pg.yaml"} {
		if _, ok := files[f]; !ok {
			t.Errorf("no %s in %v", f, files)
		}
	}
	if len(files) != 6 {
		t.Errorf("%d files, want 6", len(files))
	}
	if !strings.Contains(files["kustomization.yaml"], "- platform\n- team-a\n") ||
		!strings.Contains(files["team-a/kustomization.yaml"], "- servicebus-namespacesqueue-team-a-orders.yaml") {
		t.Errorf("kustomizations:\n%s\n%s", files["kustomization.yaml"], files["team-a/kustomization.yaml"])
	}
	rep := files["IMPORT.md"]
	for _, want := range []string{"From the test.", "| Secret | platform/pg-admin | FlexibleServer/pg spec.administratorLoginPassword |",
		"| Secret | team-a/aso-credential | the namespace's credential |"} {
		if !strings.Contains(rep, want) {
			t.Errorf("IMPORT.md lacks %q:\n%s", want, rep)
		}
	}
	for f, body := range files {
		if strings.Contains(body, "password\n") && strings.Contains(body, "demo") {
			t.Errorf("%s holds a secret value", f)
		}
	}
	// Never over a repository.
	if err := migrate.WriteTree(dir, tree); !errors.Is(err, migrate.ErrNotEmpty) {
		t.Errorf("second write: %v, want ErrNotEmpty", err)
	}
}
