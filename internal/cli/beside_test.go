package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/kubetest"
)

// TestBesideASOCommandLine: `gitaso plan --beside-aso` signed in as a Reader with a kubeconfig shows what
// ASO would do (an update of the resource group whose tag the repository changes, a delete of the object
// the repository no longer has), with each object's view, and writes nothing (the emulator's write log);
// `gitaso apply` with the same cluster refuses the resource group an ASO object manages, naming it, and
// sends it nothing. --beside-aso refuses what would write: --offline, --out, --leader-elect.
func TestBesideASOCommandLine(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator and kube-apiserver")
	}
	var mu sync.Mutex
	var writes []emulator.WriteRecord
	em := emutest.New(t, emutest.Roles("Reader"), emutest.Emulator(emulator.WithWriteLog(func(r emulator.WriteRecord) {
		if r.Method == "POST" && strings.EqualFold(r.Path, "/providers/Microsoft.ResourceGraph/resources") {
			return // a query: it reads
		}
		mu.Lock()
		writes = append(writes, r)
		mu.Unlock()
	})))
	ownerSP, ownerCred := em.AddPrincipal(t, "owner", "Owner")
	owner, err := em.Clients.For(ownerCred)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	rgID := func(name string) string { return "/subscriptions/" + em.Sub + "/resourceGroups/" + name }
	for _, rg := range []string{"rg-aso", "rg-gone"} {
		if _, err := owner.Put(ctx, rgID(rg), "2020-06-01", []byte(`{"location":"westeurope","tags":{"team":"a"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	kube := kubetest.Start(t)
	kube.Namespace(t, "team")
	kube.InstallASOCRDs(t, "resources.azure.com/ResourceGroup")
	dyn := dynamic.NewForConfigOrDie(kube.Config)
	gvr := schema.GroupVersionResource{Group: "resources.azure.com", Version: "v1api20200601", Resource: "resourcegroups"}
	for _, rg := range []string{"rg-aso", "rg-gone"} {
		ri := dyn.Resource(gvr).Namespace("team")
		u, err := ri.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
			"metadata": map[string]any{"name": rg, "namespace": "team"},
			"spec":     map[string]any{"location": "westeurope", "tags": map[string]any{"team": "a"}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = map[string]any{"id": rgID(rg), "conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded", "observedGeneration": int64(1)}}}
		if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	mu.Lock()
	writes = nil // what ASO left: from here on, gitaso's
	mu.Unlock()

	dir := t.TempDir()
	write(t, dir, "rg.yaml", "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-aso\n  namespace: team\n"+
		"spec:\n  location: westeurope\n  tags:\n    team: b\n")
	t.Setenv("GITASO_CLOUD_CONFIG", em.CloudFile)
	t.Setenv("AZURE_TENANT_ID", em.Emu.TenantID())
	t.Setenv("AZURE_CLIENT_ID", em.Principal.ClientID) // Reader
	t.Setenv("AZURE_CLIENT_SECRET", em.Principal.Secret)
	t.Setenv("AZURE_SUBSCRIPTION_ID", em.Sub)
	state := filepath.Join(t.TempDir(), "s.db")

	out, errOut, err := run(t, "plan", "--beside-aso", "--dir", dir, "--state", state, "--kubeconfig", kube.Kubeconfig, "--output", "json")
	if exitCode(err) != 2 {
		t.Fatalf("plan --beside-aso: exit %d (%v), want 2\n%s%s", exitCode(err), err, out, errOut)
	}
	var p struct {
		Beside struct {
			Cluster bool `json:"cluster"`
			Objects int  `json:"objects"`
		} `json:"besideASO"`
		Resources []struct {
			Name   string `json:"name"`
			Action string `json:"action"`
			ASO    *struct {
				Policy string `json:"policy"`
				Ready  struct {
					Status string `json:"status"`
				} `json:"ready"`
			} `json:"aso"`
		} `json:"resources"`
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !p.Beside.Cluster || p.Beside.Objects != 2 {
		t.Errorf("besideASO %+v, want the cluster's 2 objects read", p.Beside)
	}
	got := map[string]string{}
	for _, r := range p.Resources {
		got[r.Name] = r.Action
		if r.ASO == nil || r.ASO.Policy != string(aso.ReconcilePolicyManage) || r.ASO.Ready.Status != "True" {
			t.Errorf("%s: ASO view %+v", r.Name, r.ASO)
		}
	}
	if got["rg-aso"] != "update" || got["rg-gone"] != "delete" || len(got) != 2 {
		t.Errorf("ASO would do %v, want rg-aso update, rg-gone delete", got)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("plan --beside-aso left a state file: %v", err)
	}
	mu.Lock()
	if len(writes) != 0 {
		t.Errorf("plan --beside-aso wrote to Azure: %+v", writes)
	}
	mu.Unlock()

	for _, args := range [][]string{
		{"plan", "--beside-aso", "--offline", "--dir", dir},
		{"plan", "--beside-aso", "--dir", dir, "--state", state, "--out", filepath.Join(t.TempDir(), "p.json")},
		{"serve", "--beside-aso", "--leader-elect", "--dir", dir, "--kubeconfig", kube.Kubeconfig},
	} {
		if _, _, err := run(t, args...); err == nil || !strings.Contains(err.Error(), "beside") {
			t.Errorf("%v: %v, want a refusal naming --beside-aso", args, err)
		}
	}

	// Managing with the cluster: rg-aso is ASO's.
	t.Setenv("AZURE_CLIENT_ID", ownerSP.ClientID)
	t.Setenv("AZURE_CLIENT_SECRET", ownerSP.Secret)
	out, errOut, err = run(t, "apply", "--dir", dir, "--state", state, "--kubeconfig", kube.Kubeconfig)
	if exitCode(err) != 1 {
		t.Fatalf("apply: exit %d (%v), want 1\n%s%s", exitCode(err), err, out, errOut)
	}
	if !strings.Contains(out, "[Warning ManagedByASO] ASO object team/ResourceGroup/rg-aso in the cluster manages "+rgID("rg-aso")) {
		t.Errorf("apply does not name the ASO object:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, w := range writes {
		if strings.EqualFold(w.Path, rgID("rg-aso")) {
			t.Errorf("apply wrote %s %s, which ASO manages", w.Method, w.Path)
		}
	}
}
