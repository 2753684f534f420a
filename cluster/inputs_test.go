package cluster_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/kubetest"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestInputsSecretsAndWatch(t *testing.T) {
	env := kubetest.Start(t)
	cs := env.Clientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := env.Namespace(t, "team-a"), env.Namespace(t, "team-b")
	cred := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aso-credential", Namespace: a},
		StringData: map[string]string{"AZURE_CLIENT_ID": "c-1", "AZURE_CLIENT_SECRET": "shh-1"}}
	if _, err := cs.CoreV1().Secrets(a).Create(ctx, cred, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl, err := cluster.FromConfig(env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := cluster.NewInputs(cl, nil)
	var changes atomic.Int32
	in.OnChange = func() { changes.Add(1) }
	if err := in.Start(ctx); err != nil {
		t.Fatal(err)
	}
	keys := []string{a + "/aso-credential", b + "/aso-credential", a + "/per-resource"}
	got, err := in.Secrets(ctx, keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[a+"/aso-credential"]["AZURE_CLIENT_ID"] != "c-1" {
		t.Fatalf("secrets %v", got)
	}
	if changes.Load() != 0 {
		t.Errorf("the first list counted as %d changes", changes.Load())
	}

	// Rotation: the watch sees it and the next read has the new value.
	cred.StringData = map[string]string{"AZURE_CLIENT_ID": "c-2", "AZURE_CLIENT_SECRET": "shh-2"}
	if _, err := cs.CoreV1().Secrets(a).Update(ctx, cred, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the rotation to be seen", func() bool { return changes.Load() > 0 })
	waitFor(t, "the rotated value", func() bool {
		got, err := in.Secrets(ctx, keys)
		return err == nil && got[a+"/aso-credential"]["AZURE_CLIENT_ID"] == "c-2"
	})

	// A credential-from Secret that appears later is read and watched.
	n := changes.Load()
	per := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "per-resource", Namespace: a}, StringData: map[string]string{"AZURE_CLIENT_ID": "p"}}
	if _, err := cs.CoreV1().Secrets(a).Create(ctx, per, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the credential-from Secret's creation to be seen", func() bool { return changes.Load() > n })
	got, _ = in.Secrets(ctx, keys)
	if got[a+"/per-resource"]["AZURE_CLIENT_ID"] != "p" {
		t.Errorf("credential-from secret not read: %v", got)
	}
	if w := strings.Join(in.Watched(), ","); w != "Secret/team-a/per-resource" {
		t.Errorf("watched %s", w)
	}
}

func TestInputsLookupAndOIDC(t *testing.T) {
	env := kubetest.Start(t)
	cs := env.Clientset()
	ctx := context.Background()
	ns := env.Namespace(t, "flux-system")
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "platform-vars", Namespace: ns},
		Data: map[string]string{"SUBSCRIPTION_ID": "s-1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "platform-secrets", Namespace: ns},
		Data: map[string][]byte{"TOKEN": []byte("t0ken")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cl, _ := cluster.FromConfig(env.Config, cluster.Options{})
	in := cluster.NewInputs(cl, nil)
	if d, ok := in.Lookup(ctx, false, ns, "platform-vars"); !ok || d["SUBSCRIPTION_ID"] != "s-1" {
		t.Errorf("config map: %v %v", d, ok)
	}
	if d, ok := in.Lookup(ctx, true, ns, "platform-secrets"); !ok || d["TOKEN"] != "t0ken" {
		t.Errorf("secret: %v %v", d, ok)
	}
	if _, ok := in.Lookup(ctx, false, ns, "absent"); ok {
		t.Error("an absent config map was found")
	}
	issuer, err := in.OIDCIssuer(ctx)
	if err != nil || !strings.HasPrefix(issuer, "https://") {
		t.Errorf("issuer %q: %v", issuer, err)
	}

	// Without permission: absent (the renderer names it), logged.
	cfg, _ := env.User(t, "nobody")
	cl2, _ := cluster.FromConfig(cfg, cluster.Options{})
	if _, ok := cluster.NewInputs(cl2, nil).Lookup(ctx, false, ns, "platform-vars"); ok {
		t.Error("read without permission")
	}
	if _, err := cluster.NewInputs(cl2, nil).Secrets(ctx, []string{ns + "/x"}); err == nil || !strings.Contains(err.Error(), "service account needs") {
		t.Errorf("want a permission error with a hint, got %v", err)
	}
}

// With Namespaces, gitaso needs only a Role in each namespace it reads: its
// watches and lists stay inside them, and a Secret elsewhere is absent
// without a request.
func TestInputsNamespaceScoped(t *testing.T) {
	env := kubetest.Start(t)
	cs := env.Clientset()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, b := env.Namespace(t, "scoped-a"), env.Namespace(t, "scoped-b")
	for _, ns := range []string{a, b} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "aso-credential", Namespace: ns},
			StringData: map[string]string{"AZURE_CLIENT_ID": "id-" + ns}}
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A Role in namespace a only, as the chart writes with rbac.namespaces.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "gitaso", Namespace: a}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"secrets", "configmaps"},
		Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}}}
	if _, err := cs.RbacV1().Roles(a).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "gitaso", Namespace: a},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gitaso"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "scoped-gitaso"}}}
	if _, err := cs.RbacV1().RoleBindings(a).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, _ := env.User(t, "scoped-gitaso")
	cl, err := cluster.FromConfig(cfg, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := cluster.NewInputs(cl, nil)
	in.Namespaces = []string{a}
	if err := in.Start(ctx); err != nil {
		t.Fatalf("start with a Role in %s only: %v", a, err)
	}
	got, err := in.Secrets(ctx, []string{a + "/aso-credential", b + "/aso-credential"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[a+"/aso-credential"]["AZURE_CLIENT_ID"] != "id-"+a {
		t.Errorf("secrets %v, want only %s's", got, a)
	}
	if _, found := in.Lookup(ctx, false, b, "platform-vars"); found {
		t.Error("a ConfigMap outside the namespaces was found")
	}
	// The exporter's first sync lists only there too.
	x, err := cluster.NewExporter(cl, cluster.ExporterOptions{ListNamespaces: []string{a}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Sync(ctx, []cluster.Export{{Owner: a + "/resources.azure.com/ResourceGroup/rg", Namespace: a, Name: "rg-settings",
		Data: map[string]string{"location": "westeurope"}}})
	if err != nil || len(res.Errors) > 0 {
		t.Fatalf("sync with a Role in %s only: %v %v", a, err, res)
	}
	if cm, err := cs.CoreV1().ConfigMaps(a).Get(ctx, "rg-settings", metav1.GetOptions{}); err != nil || cm.Data["location"] != "westeurope" {
		t.Errorf("export: %v %v", cm, err)
	}
}
