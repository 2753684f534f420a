package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/cli"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/kubetest"
	"github.com/gitaso/gitaso/record"
)

// BenchmarkImport1000 is `gitaso import` of 1,000 ASO objects (100 resource
// groups, 900 user-assigned identities, in 10 namespaces) as ASO leaves
// them in a real kube-apiserver, their resources in the emulator: the
// repository written and every resource adopted into a new state. It
// reports Azure's reads and writes per import; a write fails it.
func BenchmarkImport1000(b *testing.B) {
	kube := kubetest.Start(b)
	installASOCRDs(b, kube)
	c := newASOCluster(b, kube)
	var wl writeLog
	emu := emutest.New(b, emutest.Emulator(emulator.WithWriteLog(wl.add), emulator.WithoutThrottling(), emulator.WithRequestLogSize(0)))
	for k, v := range emu.SecretData(emu.Principal) {
		b.Setenv(k, v)
	}
	dir := b.TempDir()
	var objs []map[string]any
	for ns := range 10 {
		namespace := fmt.Sprintf("team-%02d", ns)
		kube.Namespace(b, namespace)
		for g := range 10 {
			rg := fmt.Sprintf("rg-%02d-%02d", ns, g)
			objs = append(objs, map[string]any{"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
				"metadata": map[string]any{"name": rg, "namespace": namespace, "labels": map[string]any{"team": namespace}},
				"spec":     map[string]any{"location": "westeurope", "tags": map[string]any{"owner": namespace}}})
			for i := range 9 {
				objs = append(objs, map[string]any{"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
					"metadata": map[string]any{"name": fmt.Sprintf("id-%02d-%02d-%d", ns, g, i), "namespace": namespace},
					"spec":     map[string]any{"location": "westeurope", "owner": map[string]any{"name": rg}}})
			}
		}
	}
	// ASO creates the resources.
	asoDir, asoState := filepath.Join(dir, "aso-repo"), filepath.Join(dir, "aso.db")
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		y, err := yaml.Marshal(o)
		if err != nil {
			b.Fatal(err)
		}
		write(b, filepath.Join(asoDir, u.GetNamespace()), strings.ToLower(u.GetKind())+"-"+u.GetName()+".yaml", string(y))
	}
	if err := cli.Run(context.Background(), []string{"apply", "--dir", asoDir, "--state", asoState, "--cloud-config", emu.CloudFile,
		"--auto-approve", "--parallelism", "64", "--log-level", "error"}, discard{}, discard{}); err != nil {
		b.Fatalf("ASO's resources: %v", err)
	}
	created := stateResources(b, asoState)
	if len(created) != len(objs) {
		b.Fatalf("%d resources created, want %d", len(created), len(objs))
	}
	for _, o := range objs {
		c.fluxApplies(b, deepCopyJSON(b, o))
	}
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		r := created[record.ResourceKey(u.GetNamespace(), u.GroupVersionKind().Group, u.GetKind(), u.GetName())]
		c.asoReconciled(b, u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName(), r.ARMID)
	}
	wl.take()
	emu.Emu.ResetStats()
	n := 0
	for b.Loop() {
		n++
		out := filepath.Join(dir, fmt.Sprintf("repo-%d", n))
		st := filepath.Join(dir, fmt.Sprintf("gitaso-%d.db", n))
		if err := cli.Run(context.Background(), []string{"import", "--kubeconfig", kube.Kubeconfig, "--out", out, "--state", st,
			"--cloud-config", emu.CloudFile, "--log-level", "error"}, discard{}, discard{}); err != nil {
			b.Fatalf("import: %v", err)
		}
		b.StopTimer()
		if got := stateResources(b, st); len(got) != len(objs) {
			b.Fatalf("%d resources adopted, want %d", len(got), len(objs))
		}
		os.RemoveAll(out)
		os.Remove(st)
		b.StartTimer()
	}
	if w := wl.take(); len(w) > 0 {
		b.Fatalf("import wrote to Azure: %d writes, first %s", len(w), w[0])
	}
	st := emu.Emu.Stats()
	var reads int64
	for m, k := range st.ByMethod {
		if m == "GET" || m == "POST" { // POST: Resource Graph queries (writes fail above)
			reads += k
		}
	}
	b.ReportMetric(float64(len(objs)), "objects")
	b.ReportMetric(float64(reads)/float64(n), "azure-reads/op")
	b.ReportMetric(0, "azure-writes/op")
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
