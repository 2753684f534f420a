package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/kubetest"
)

const (
	ownerID  = "team-a/managedidentity.azure.com/UserAssignedIdentity/team-a-identity"
	ownerID2 = "team-a/storage.azure.com/StorageAccount/teamastorage"
	armID    = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a-identity"
)

func newExporter(t *testing.T, env *kubetest.Env) *cluster.Exporter {
	t.Helper()
	cl, err := cluster.FromConfig(env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := cluster.NewExporter(cl, cluster.ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func sync(t *testing.T, x *cluster.Exporter, want ...cluster.Export) *cluster.SyncResult {
	t.Helper()
	res, err := x.Sync(context.Background(), want)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func getCM(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get ConfigMap %s/%s: %v", ns, name, err)
	}
	return cm
}

func TestExportsLifecycle(t *testing.T) {
	env := kubetest.Start(t)
	cs := env.Clientset()
	ctx := context.Background()
	ns := env.Namespace(t, "team-a")
	x := newExporter(t, env)

	settings := cluster.Export{Owner: ownerID, ARMID: armID, Namespace: ns, Name: "team-a-identity-settings",
		Data: map[string]string{"clientId": "11111111-1111-1111-1111-111111111111", "principalId": "p-1"}}
	secret := cluster.Export{Owner: ownerID2, Namespace: ns, Name: "storage-keys", Secret: true,
		Data: map[string]string{"key1": "s3cr3t-value"}}

	res := sync(t, x, settings, secret)
	if res.Applied != 2 || len(res.Errors) != 0 {
		t.Fatalf("first sync: %+v", res)
	}
	cm := getCM(t, cs, ns, "team-a-identity-settings")
	if cm.Data["clientId"] != "11111111-1111-1111-1111-111111111111" {
		t.Errorf("clientId = %q", cm.Data["clientId"])
	}
	if cm.Labels[cluster.LabelManagedBy] != "gitaso" || cm.Annotations[cluster.AnnotationOwner] != ownerID || cm.Annotations[cluster.AnnotationARMID] != armID {
		t.Errorf("labels %v annotations %v", cm.Labels, cm.Annotations)
	}
	if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != cluster.FieldManager || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("managed fields %+v, want one Apply entry of %q", cm.ManagedFields, cluster.FieldManager)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "storage-keys", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["key1"]) != "s3cr3t-value" || sec.Type != corev1.SecretTypeOpaque {
		t.Errorf("secret %v type %s", sec.Data, sec.Type)
	}

	// A Pod that reads the exported value passes a server-side dry run.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "example.invalid/app:1",
		Env: []corev1.EnvVar{{Name: "AZURE_CLIENT_ID", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "team-a-identity-settings"}, Key: "clientId"}}}},
	}}}}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Errorf("pod dry run: %v", err)
	}

	// Unchanged: nothing sent.
	rv := cm.ResourceVersion
	res = sync(t, x, settings, secret)
	if res.Applied != 0 || res.Unchanged != 2 {
		t.Errorf("unchanged sync: %+v", res)
	}
	if getCM(t, cs, ns, "team-a-identity-settings").ResourceVersion != rv {
		t.Error("an unchanged export was written again")
	}

	// A changed value is updated; a key that went is removed.
	settings.Data = map[string]string{"clientId": "22222222-2222-2222-2222-222222222222"}
	res = sync(t, x, settings, secret)
	if res.Applied != 1 {
		t.Errorf("changed sync: %+v", res)
	}
	cm = getCM(t, cs, ns, "team-a-identity-settings")
	if cm.Data["clientId"] != "22222222-2222-2222-2222-222222222222" || cm.Data["principalId"] != "" {
		t.Errorf("after change: %v", cm.Data)
	}

	// The export goes: the object goes.
	res = sync(t, x, settings)
	if res.Deleted != 1 {
		t.Errorf("removal sync: %+v", res)
	}
	if _, err := cs.CoreV1().Secrets(ns).Get(ctx, "storage-keys", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("secret still there: %v", err)
	}

	// A restarted gitaso (a new Exporter) removes what is no longer
	// exported, found by its labels.
	x2 := newExporter(t, env)
	res = sync(t, x2)
	if res.Deleted != 1 {
		t.Errorf("restart sync: %+v", res)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "team-a-identity-settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("config map still there: %v", err)
	}
}

func TestExportsNeverTouchOthers(t *testing.T) {
	env := kubetest.Start(t)
	cs := env.Clientset()
	ctx := context.Background()
	ns := env.Namespace(t, "team-b")
	x := newExporter(t, env)

	// An object someone created with kubectl: a conflict, left alone.
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"clientId": "theirs", "other": "x"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, mine, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatal(err)
	}
	exp := cluster.Export{Owner: ownerID, Namespace: ns, Name: "settings", Data: map[string]string{"clientId": "ours"}}
	res := sync(t, x, exp)
	var ce *cluster.ConflictError
	if !errors.As(res.Errors[ownerID], &ce) || !strings.Contains(ce.Error(), "not managed by gitaso") || !strings.Contains(ce.Error(), "kubectl-create") {
		t.Fatalf("want a conflict naming the manager, got %v", res.Errors)
	}
	if cm := getCM(t, cs, ns, "settings"); cm.Data["clientId"] != "theirs" || cm.Labels[cluster.LabelManagedBy] != "" {
		t.Errorf("object touched: %v %v", cm.Data, cm.Labels)
	}
	// Removing the export does not delete their object either.
	if res := sync(t, x); res.Deleted != 0 {
		t.Errorf("deleted someone else's object: %+v", res)
	}
	getCM(t, cs, ns, "settings")

	// gitaso's object whose value a person changed with kubectl edit: the
	// next full write reports a conflict naming the field, and keeps the
	// person's value.
	exp2 := cluster.Export{Owner: ownerID, Namespace: ns, Name: "gitaso-settings", Data: map[string]string{"clientId": "ours"}}
	sync(t, x, exp2)
	cm := getCM(t, cs, ns, "gitaso-settings")
	cm.Data["clientId"] = "edited"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	x.Forget() // a refresh
	res = sync(t, x, exp2)
	if !errors.As(res.Errors[ownerID], &ce) || !strings.Contains(ce.Error(), "data.clientId") || !strings.Contains(ce.Error(), "kubectl-edit") {
		t.Fatalf("want a field conflict with kubectl-edit, got %v", res.Errors)
	}
	if getCM(t, cs, ns, "gitaso-settings").Data["clientId"] != "edited" {
		t.Error("gitaso overwrote a field another manager owns")
	}

	// Two resources exporting to one object: the second is refused.
	a := cluster.Export{Owner: ownerID, Namespace: ns, Name: "shared", Data: map[string]string{"a": "1"}}
	b := cluster.Export{Owner: ownerID2, Namespace: ns, Name: "shared", Data: map[string]string{"b": "2"}}
	res = sync(t, x, exp2, a, b)
	if !errors.As(res.Errors[ownerID2], &ce) || !strings.Contains(ce.Error(), "already exported by "+ownerID) {
		t.Errorf("want the second owner refused, got %v", res.Errors)
	}

	// A namespace that does not exist: an error for that resource.
	res = sync(t, x, cluster.Export{Owner: ownerID2, Namespace: "nowhere", Name: "x", Data: map[string]string{"k": "v"}})
	if !errors.Is(res.Errors[ownerID2], cluster.ErrNamespaceNotFound) {
		t.Errorf("want namespace not found, got %v", res.Errors)
	}
}

func TestExportsForbidden(t *testing.T) {
	env := kubetest.Start(t)
	ns := env.Namespace(t, "team-c")
	cfg, _ := env.User(t, "nobody")
	cl, err := cluster.FromConfig(cfg, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	x, err := cluster.NewExporter(cl, cluster.ExporterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = x.Sync(context.Background(), []cluster.Export{{Owner: ownerID, Namespace: ns, Name: "s", Secret: true, Data: map[string]string{"k": "hush-hush"}}})
	if err == nil || !strings.Contains(err.Error(), "service account needs") || strings.Contains(err.Error(), "hush-hush") {
		t.Fatalf("want a permission error with a hint and no value, got %v", err)
	}
}
