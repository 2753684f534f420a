package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/kubetest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

const identityYAML = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: team-a-rg
  namespace: team-a
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: team-a-identity
  namespace: team-a
spec:
  location: westeurope
  owner:
    name: team-a-rg
`

const identityExports = `  operatorSpec:
    configMaps:
      clientId:
        name: team-a-identity-settings
        key: clientId
      principalId:
        name: team-a-identity-settings
        key: principalId
`

// TestExportsInCluster: a run writes the identity's exported ConfigMap into
// the cluster; a conflicting field manager is an error in the resource's
// status (nothing overwritten) until it is resolved; removing the export
// removes the object.
func TestExportsInCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator and kube-apiserver")
	}
	kube := kubetest.Start(t)
	cs := kube.Clientset()
	ctx := context.Background()
	ns := kube.Namespace(t, "team-a")
	env := emutest.New(t)
	dir := t.TempDir()
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "identity.yaml"), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cl, err := cluster.FromConfig(kube.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := cluster.NewExporter(cl, cluster.ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Exports = x
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, nil)
	key := record.ResourceKey(ns, "managedidentity.azure.com", "UserAssignedIdentity", "team-a-identity")
	run := func() record.Resource {
		t.Helper()
		if _, err := rec.Once(ctx, reconcile.Options{Trigger: "test", Refresh: true, All: true}); err != nil {
			t.Fatal(err)
		}
		r, ok, err := db.Resource(key)
		if err != nil || !ok {
			t.Fatalf("identity not in state: %v", err)
		}
		return r
	}

	// Someone got there first with kubectl.
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-a-identity-settings", Namespace: ns}, Data: map[string]string{"clientId": "by-hand"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, theirs, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	write(identityYAML + identityExports)
	r := run()
	if r.Ready.Status != record.StatusFalse || r.Ready.Reason != reconcile.ReasonExportConflict || !strings.Contains(r.Ready.Message, "kubectl-create") {
		t.Fatalf("want an export conflict in the status, got %+v", r.Ready)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "team-a-identity-settings", metav1.GetOptions{})
	if err != nil || cm.Data["clientId"] != "by-hand" {
		t.Fatalf("their object was touched: %v %v", cm, err)
	}

	// Resolved: their object goes, the next run writes gitaso's and the
	// resource is Ready again.
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "team-a-identity-settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = run()
	if r.Ready.Status != record.StatusTrue {
		t.Fatalf("not Ready after the conflict went: %+v", r.Ready)
	}
	cm, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "team-a-identity-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := r.Outputs["team-a-identity-settings/clientId"]; want == "" || cm.Data["clientId"] != want {
		t.Errorf("clientId in the cluster %q, in state %q", cm.Data["clientId"], want)
	}
	if cm.Annotations[cluster.AnnotationOwner] != key || !strings.EqualFold(cm.Annotations[cluster.AnnotationARMID], r.ARMID) {
		t.Errorf("annotations %v", cm.Annotations)
	}

	// The export goes from the manifest: the object goes from the cluster.
	write(identityYAML)
	run()
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "team-a-identity-settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("exported ConfigMap still in the cluster: %v", err)
	}
}
