package autoplan_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/autoplan"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/kubetest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
)

// TestAutoplanBesideASO: serve --beside-aso --autoplan's path. A pull request of a repository ASO applies
// is planned as ASO would apply it (an update of the resource group whose ASO object manages it, a delete
// of the object the repository does not have) by a Reader through the read-only client, and its comment
// says so; nothing is sent to Azure but reads.
func TestAutoplanBesideASO(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	env := emutest.New(t)
	ctx := t.Context()
	rgID := func(n string) string { return "/subscriptions/" + env.Sub + "/resourceGroups/" + n }
	for _, n := range []string{"aso-rg", "gone-rg"} {
		if _, err := env.Client.Put(ctx, rgID(n), "2020-06-01", []byte(`{"location":"westeurope","tags":{"v":"1"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	kube := kubetest.Start(t)
	kube.Namespace(t, "ops")
	kube.InstallASOCRDs(t, "resources.azure.com/ResourceGroup")
	dyn := dynamic.NewForConfigOrDie(kube.Config)
	ri := dyn.Resource(schema.GroupVersionResource{Group: "resources.azure.com", Version: "v1api20200601", Resource: "resourcegroups"}).Namespace("ops")
	for _, n := range []string{"aso-rg", "gone-rg"} {
		u, err := ri.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
			"metadata": map[string]any{"name": n, "namespace": "ops"}, "spec": map[string]any{"location": "westeurope"},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		u.Object["status"] = map[string]any{"id": rgID(n), "conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Succeeded"}}}
		if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := cluster.FromConfig(kube.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}

	r := repo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(r.dir, "rg.yaml"), []byte(rg("aso-rg", "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	r.git("add", "-A")
	r.git("commit", "-qm", "base")
	head := r.pr(1, map[string]string{"rg.yaml": rg("aso-rg", "2")})

	_, reader := env.AddPrincipal(t, "reader", "Reader")
	readOnly, err := azure.ReadOnly(env.Cloud, azure.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	cfg := reconcile.DefaultConfig()
	cfg.Global, cfg.BesideASO = reader, true
	cfg.ASO = func(ctx context.Context) ([]cluster.ASOObject, error) {
		return cl.ListASOObjects(ctx, cluster.ASOListOptions{Namespaces: []string{"ops"}})
	}
	f := newFake()
	a := autoplan.New(autoplan.Config{
		Forge: f,
		Source: func(pr forge.PullRequest) (source.Source, error) {
			return source.NewGit(source.GitOptions{URL: "file://" + r.dir, Ref: fmt.Sprintf("refs/pull/%d/head", pr.Number)})
		},
		Plan: func(ctx context.Context, src source.Source) (*reconcile.Report, error) {
			return reconcile.New(src, nil, readOnly, cfg, nil).PlanOnly(ctx, true)
		},
		Comment: func(p *planner.Plan, refused error) []string {
			return forge.Comment(p, refused, forge.Limit("github"), forge.DefaultMarker)
		},
	})
	env.Emu.ResetStats()
	f.prs = []forge.PullRequest{{Number: 1, HeadSHA: head}}
	if _, err := a.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	c := strings.Join(f.comments[1], "")
	for _, s := range []string{
		"### gitaso plan beside ASO for",
		"(2 ASO objects in the cluster)",
		"| ~ update | `ops/ResourceGroup/aso-rg` | `" + rgID("aso-rg") + "` | `/tags/v` | ops/ResourceGroup/aso-rg, policy manage, Ready True (Succeeded) |",
		"| - delete | `ops/ResourceGroup/gone-rg` |",
	} {
		if !strings.Contains(c, s) {
			t.Errorf("the comment lacks %q:\n%s", s, c)
		}
	}
	if s := f.last(head); s.State != forge.StateSuccess {
		t.Errorf("status %+v", s)
	}
	for _, l := range env.Emu.RequestLog() {
		if l.Method != "GET" && !(l.Method == "POST" && strings.Contains(strings.ToLower(l.Path), "resourcegraph")) &&
			strings.HasPrefix(strings.ToLower(l.Path), "/subscriptions/") {
			t.Errorf("autoplan beside ASO sent %s %s", l.Method, l.Path)
		}
	}
}
