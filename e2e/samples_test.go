package e2e_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// sharedDir finds ../shared (GITASO_SHARED overrides).
func sharedDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("GITASO_SHARED")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "conformance", "aso")); err != nil {
		t.Skipf("ASO conformance samples not found at %s (set GITASO_SHARED): %v", dir, err)
	}
	return dir
}

// TestASOSamplesEndToEnd applies, through gitaso's whole pipeline (source,
// planner, executor, state) against the emulator, every ASO sample of the
// kinds the seeds use — resource groups, identities and federated
// credentials, role assignments and definitions, storage accounts with all
// their services, Service Bus, PostgreSQL and Front Door — as the samples
// are written (namespace default, resource group aso-sample-rg), and
// requires every resource to be Ready.
func TestASOSamplesEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	root := filepath.Join(sharedDir(t), "conformance", "aso")
	for _, set := range []string{"resources/v1api", "managedidentity/v1api20230131", "authorization/v1api20220401",
		"storage/v20230101", "servicebus/v1api20240101", "dbforpostgresql/v1api20240801", "cdn/v1api20230501"} {
		t.Run(strings.ReplaceAll(set, "/", "_"), func(t *testing.T) {
			t.Parallel()
			applySampleSet(t, filepath.Join(root, set))
		})
	}
}

type expectedSet struct {
	TestInputs struct {
		ConfigMaps map[string]map[string]string `json:"configMaps"`
		Secrets    map[string]map[string]string `json:"secrets"`
	} `json:"testInputs"`
	ExcludedSamples []struct{ File string } `json:"excludedSamples"`
	Resources       []struct {
		File, Kind, Name string
		OwnerYaml        string `json:"ownerYaml"`
		OwnerEffective   string `json:"ownerEffective"`
	} `json:"resources"`
}

func applySampleSet(t *testing.T, dir string) {
	raw, err := os.ReadFile(filepath.Join(dir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp expectedSet
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	excluded := map[string]bool{}
	for _, x := range exp.ExcludedSamples {
		excluded[x.File] = true
	}
	fixOwner := map[string]string{} // file → effective owner name (the samples' own inconsistencies)
	for _, r := range exp.Resources {
		if r.OwnerEffective != "" && r.OwnerYaml != r.OwnerEffective {
			fixOwner[r.File] = r.OwnerEffective
		}
	}

	repo := t.TempDir()
	hasRG := false
	exported := map[string]bool{}
	var files []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	sort.Strings(files)
	for _, p := range files {
		rel, _ := filepath.Rel(dir, p)
		if excluded[filepath.ToSlash(rel)] {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := source.ParseFile(rel, data)
		if err != nil {
			t.Fatal(err)
		}
		var out []byte
		for _, o := range objs {
			if o.Kind() == "ResourceGroup" && o.Name() == "aso-sample-rg" {
				hasRG = true
			}
			spec, _ := o.Content["spec"].(map[string]any)
			if name, ok := fixOwner[filepath.ToSlash(rel)]; ok && spec != nil {
				if owner, ok := spec["owner"].(map[string]any); ok {
					owner["name"] = name
				}
			}
			if op, ok := spec["operatorSpec"].(map[string]any); ok {
				if cms, ok := op["configMaps"].(map[string]any); ok {
					for _, v := range cms {
						if m, ok := v.(map[string]any); ok {
							exported[m["name"].(string)] = true
						}
					}
				}
			}
			b, err := yaml.Marshal(o.Content)
			if err != nil {
				t.Fatal(err)
			}
			out = append(append(out, b...), []byte("---\n")...)
		}
		dst := filepath.Join(repo, filepath.Base(p))
		if err := os.WriteFile(dst, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var extra strings.Builder
	if !hasRG {
		extra.WriteString("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: aso-sample-rg\n  namespace: default\nspec:\n  location: westus2\n---\n")
	}
	for name, data := range exp.TestInputs.ConfigMaps {
		if exported[name] {
			continue // a sample exports it (identity-settings): gitaso resolves it after apply
		}
		cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "default"}, "data": data}
		b, _ := yaml.Marshal(cm)
		extra.Write(append(b, []byte("---\n")...))
	}
	for name, data := range exp.TestInputs.Secrets {
		sd := map[string]string{}
		for k := range data {
			sd[k] = "Sample-Passw0rd-for-the-emulator"
		}
		sec := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": "default"}, "stringData": sd}
		b, _ := yaml.Marshal(sec)
		extra.Write(append(b, []byte("---\n")...))
	}
	if err := os.WriteFile(filepath.Join(repo, "zz-test-inputs.yaml"), []byte(extra.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	// The samples use the zero subscription and tenant in their ARM IDs.
	env := emutest.New(t, emutest.Emulator(emulator.WithoutThrottling(),
		emulator.WithSubscriptionID("00000000-0000-0000-0000-000000000000")))
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	rec := reconcile.New(source.NewDir(repo, ""), db, env.Clients, cfg, nil)
	rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "test"})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	for _, rr := range rep.Result.Resources {
		if rr.Ready.Status != record.StatusTrue {
			t.Errorf("%s: %s %s %s", rr.Resource.ID(), rr.Ready.Status, rr.Ready.Reason, rr.Ready.Message)
		}
	}
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Errorf("outcome %s: %s", rep.Run.Outcome, rep.Run.Error)
	}
	// A second run finds nothing to do, also after reading Azure back.
	rep, err = rec.Once(context.Background(), reconcile.Options{Trigger: "test", Refresh: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Plan.Resources {
		if r.Action.String() != "no-op" {
			t.Errorf("second run: %s %s %v", r.ID(), r.Action, r.Changes)
		}
	}
	t.Logf("%d resources applied and stable", len(rep.Plan.Resources))
}
