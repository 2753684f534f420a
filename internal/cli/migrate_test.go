package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/kubetest"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// writeLog collects the emulator's write log: the proof that a step wrote
// nothing to Azure.
type writeLog struct {
	mu   sync.Mutex
	recs []emulator.WriteRecord
}

func (w *writeLog) add(r emulator.WriteRecord) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.recs = append(w.recs, r)
}

// take returns the writes since the last take. A Resource Graph query is
// a POST that reads: it is not a write.
func (w *writeLog) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]string, 0, len(w.recs))
	for _, r := range w.recs {
		if r.Method == "POST" && strings.EqualFold(r.Path, "/providers/Microsoft.ResourceGraph/resources") {
			continue
		}
		out = append(out, fmt.Sprintf("%s %s (%d)", r.Method, r.Path, r.Status))
	}
	w.recs = nil
	return out
}

// asoCluster is a real kube-apiserver holding ASO's CRDs, with helpers that
// write objects as Flux and ASO's controller do.
type asoCluster struct {
	env    *kubetest.Env
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newASOCluster(t *testing.T, env *kubetest.Env) *asoCluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := rest.HTTPClientFor(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	m, err := apiutil.NewDynamicRESTMapper(env.Config, hc)
	if err != nil {
		t.Fatal(err)
	}
	return &asoCluster{env: env, dyn: dyn, mapper: m}
}

func (c *asoCluster) resource(t *testing.T, apiVersion, kind, ns string) dynamic.ResourceInterface {
	t.Helper()
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		t.Fatal(err)
	}
	m, err := c.mapper.RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		t.Fatalf("%s %s: %v", apiVersion, kind, err)
	}
	return c.dyn.Resource(m.Resource).Namespace(ns)
}

func (c *asoCluster) get(t *testing.T, apiVersion, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := c.resource(t, apiVersion, kind, ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", kind, ns, name, err)
	}
	return u
}

// fluxApplies applies obj as Flux's kustomize-controller does (server-side
// apply, forced, its field manager), with what ASO's defaulting webhook adds
// (spec.azureName: admission changes are recorded under the request's
// manager).
func (c *asoCluster) fluxApplies(t *testing.T, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	k, ok := aso.LookupAPIVersion(u.GetAPIVersion(), u.GetKind())
	if !ok {
		t.Fatalf("%s %s not in the catalog", u.GetAPIVersion(), u.GetKind())
	}
	spec, _ := obj["spec"].(map[string]any)
	if _, has := spec["azureName"]; !has && k.AzureNameField && k.Singleton == "" {
		n, err := aso.AzureName(k, u.GetNamespace(), u.GetName(), spec)
		if err != nil {
			t.Fatal(err)
		}
		spec["azureName"] = n
	}
	_, err := c.resource(t, u.GetAPIVersion(), u.GetKind(), u.GetNamespace()).Apply(context.Background(), u.GetName(), u,
		metav1.ApplyOptions{FieldManager: "kustomize-controller", Force: true})
	if err != nil {
		t.Fatalf("flux applies %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
}

// asoReconciled writes what ASO's controller writes once the resource
// exists: its annotations, finalizer and owner reference (an update, field
// manager aso-controller), then the status subresource.
func (c *asoCluster) asoReconciled(t *testing.T, apiVersion, kind, ns, name, armID string) {
	t.Helper()
	ctx := context.Background()
	ri := c.resource(t, apiVersion, kind, ns)
	u := c.get(t, apiVersion, kind, ns, name)
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[aso.AnnotationResourceID] = armID
	ann["serviceoperator.azure.com/poller-resume-token"] = "eyJ0b2tlbiI6InRlc3QifQ"
	ann["serviceoperator.azure.com/latest-reconciled-generation"] = fmt.Sprint(u.GetGeneration())
	u.SetAnnotations(ann)
	u.SetFinalizers([]string{aso.Finalizer})
	if owner, ok := aso.Owner(u.Object["spec"].(map[string]any)); ok && owner.Name != "" {
		k, _ := aso.LookupAPIVersion(apiVersion, kind)
		group, okind := owner.Group, owner.Kind
		if group == "" {
			group, okind = k.OwnerGroup, k.OwnerKind
		}
		if ok := c.ownerRef(t, u, group, okind, ns, owner.Name); !ok {
			t.Fatalf("%s %s/%s: owner %s/%s %s not in the cluster", kind, ns, name, group, okind, owner.Name)
		}
	}
	u, err := ri.Update(ctx, u, metav1.UpdateOptions{FieldManager: "aso-controller"})
	if err != nil {
		t.Fatalf("ASO updates %s %s/%s: %v", kind, ns, name, err)
	}
	u.Object["status"] = map[string]any{
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "severity": "", "reason": "Succeeded",
			"observedGeneration": u.GetGeneration(), "lastTransitionTime": "2026-11-28T09:00:00Z"}},
		"id": armID,
	}
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "aso-controller"}); err != nil {
		t.Fatalf("ASO's status of %s %s/%s: %v", kind, ns, name, err)
	}
}

// ownerRef adds an owner reference to the ASO object group/kind ns/name.
func (c *asoCluster) ownerRef(t *testing.T, u *unstructured.Unstructured, group, kind, ns, name string) bool {
	t.Helper()
	for _, k := range aso.Kinds() {
		if k.Group != group || k.Kind != kind {
			continue
		}
		m, err := c.mapper.RESTMapping(schema.GroupKind{Group: group, Kind: kind}, k.Version)
		if err != nil {
			continue // a version the cluster does not serve
		}
		o, err := c.dyn.Resource(m.Resource).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		u.SetOwnerReferences(append(u.GetOwnerReferences(), metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: kind, Name: name, UID: o.GetUID()}))
		return true
	}
	return false
}

// onboardingAsASOLeavesIt returns the onboarding example's ASO objects as
// Flux applies them (variables substituted), and the Secrets it puts into
// the cluster beside them (the PostgreSQL password).
func onboardingObjects(t *testing.T, vars map[string]string) (asoObjs []map[string]any, secrets []*corev1.Secret) {
	t.Helper()
	snap, err := source.NewDir("../../examples", "onboarding").Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range snap.Objects {
		b, err := json.Marshal(o.Content)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for k, v := range vars {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		switch {
		case aso.IsASOGroup(o.Group()):
			asoObjs = append(asoObjs, m)
		case o.IsSecret() && o.Name() != aso.NamespaceCredentialSecret:
			var sec corev1.Secret
			if err := json.Unmarshal([]byte(s), &sec); err != nil {
				t.Fatal(err)
			}
			secrets = append(secrets, &sec)
		}
	}
	return asoObjs, secrets
}

func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
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
	return files
}

func stateResources(t *testing.T, file string) map[string]record.Resource {
	t.Helper()
	db, err := state.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]record.Resource{}
	for _, r := range rs {
		out[r.Key()] = r
	}
	return out
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestMigrateOnboarding takes the onboarding example from ASO to gitaso and
// back through the CLI: its resources in the emulator and its ASO objects in
// a real kube-apiserver as ASO leaves them; import writes a repository whose
// manifests are exactly what Flux applied and adopts every resource; the
// first plan is "no changes"; handover of team-a is refused while Flux sets
// one object's policy (the others set stay set: each resource is ASO's or
// gitaso's), then finishes; export gives team-a back and detaches it. The
// emulator's write log shows no write to Azure from import to export.
func TestMigrateOnboarding(t *testing.T) {
	kube := kubetest.Start(t)
	installASOCRDs(t, kube)
	c := newASOCluster(t, kube)
	var wl writeLog
	emu := emutest.New(t, emutest.Emulator(emulator.WithWriteLog(wl.add)))
	teamSP, _ := emu.AddPrincipal(t, "team-a", "Owner")
	for k, v := range emu.SecretData(emu.Principal) {
		t.Setenv(k, v)
	}
	ctx := t.Context()
	cs := kube.Clientset()
	for _, ns := range []string{"platform", "team-a"} {
		kube.Namespace(t, ns)
	}
	vars := map[string]string{"SUBSCRIPTION_ID": emu.Sub, "TENANT_ID": emu.Emu.TenantID(), "CLUSTER_OIDC": "https://oidc.gitaso.local/cluster-01/"}
	objs, secrets := onboardingObjects(t, vars)
	teamCred := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: aso.NamespaceCredentialSecret, Namespace: "team-a"}, StringData: emu.SecretData(teamSP)}
	for _, sec := range append(secrets, teamCred) {
		if _, err := cs.CoreV1().Secrets(sec.Namespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	kc, cloud := kube.Kubeconfig, emu.CloudFile

	// ASO creates the resources (gitaso sends the bodies ASO sends), from
	// the objects Flux applies; the Secrets are read from the cluster.
	asoDir := filepath.Join(dir, "aso-repo")
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		b, err := yaml.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		write(t, filepath.Join(asoDir, u.GetNamespace()), strings.ToLower(u.GetKind())+"-"+u.GetName()+".yaml", string(b))
	}
	asoState := filepath.Join(dir, "aso.db")
	if out, stderr, err := run(t, "apply", "--dir", asoDir, "--state", asoState, "--cloud-config", cloud, "--kubeconfig", kc,
		"--cluster-exports=false", "--auto-approve"); err != nil {
		t.Fatalf("ASO's resources: %v\n%s\n%s", err, out, stderr)
	}
	created := stateResources(t, asoState)
	if len(created) != len(objs) {
		t.Fatalf("%d resources created, want %d: %v", len(created), len(objs), keysOf(created))
	}
	// ASO's objects as ASO leaves them.
	for _, o := range objs {
		c.fluxApplies(t, deepCopyJSON(t, o))
	}
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		r, ok := created[record.ResourceKey(u.GetNamespace(), u.GroupVersionKind().Group, u.GetKind(), u.GetName())]
		if !ok {
			t.Fatalf("%s %s/%s not created", u.GetKind(), u.GetNamespace(), u.GetName())
		}
		c.asoReconciled(t, u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName(), r.ARMID)
	}
	if err := os.Remove(asoState); err != nil {
		t.Fatal(err)
	}
	wl.take()

	// 2. Import: the manifests are what Flux applied, every resource adopted.
	repo, st := filepath.Join(dir, "repo"), filepath.Join(dir, "gitaso.db")
	out, stderr, err := run(t, "import", "--kubeconfig", kc, "-n", "platform", "-n", "team-a", "--out", repo, "--state", st, "--cloud-config", cloud)
	if err != nil {
		t.Fatalf("import: %v\n%s\n%s", err, out, stderr)
	}
	if w := wl.take(); len(w) > 0 {
		t.Errorf("import wrote to Azure: %v", w)
	}
	if !strings.Contains(out, fmt.Sprintf("%d ASO objects of namespace(s) platform, team-a written to %s", len(objs), repo)) ||
		!strings.Contains(out, fmt.Sprintf("Adopted into %s without a write to Azure: %d adopted, 0 already in the state", st, len(objs))) {
		t.Errorf("import output:\n%s", out)
	}
	files := readTree(t, repo)
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		g, _, _ := strings.Cut(u.GroupVersionKind().Group, ".")
		f := u.GetNamespace() + "/" + strings.ToLower(g+"-"+u.GetKind()) + "-" + u.GetName() + ".yaml"
		var got map[string]any
		if err := yaml.Unmarshal([]byte(files[f]), &got); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if d := cmp.Diff(o, got); d != "" {
			t.Errorf("%s is not what Flux applied (-applied +imported):\n%s", f, d)
		}
	}
	for _, want := range []string{"| Secret | platform/snd-infra-pg01-admin | FlexibleServer/snd-infra-pg01 spec.administratorLoginPassword |",
		"| Secret | team-a/aso-credential | the namespace's credential |",
		"| ConfigMap | platform/team-a-identity-settings |"} {
		if !strings.Contains(files["IMPORT.md"], want) {
			t.Errorf("IMPORT.md lacks %q:\n%s", want, files["IMPORT.md"])
		}
	}
	for f, body := range files {
		if strings.Contains(body, "demo-only-NOT-A-REAL-PASSWORD") || strings.Contains(body, teamSP.Secret) {
			t.Errorf("%s holds a secret value", f)
		}
	}
	if got := stateResources(t, st); len(got) != len(objs) {
		t.Errorf("state after import: %d resources, want %d", len(got), len(objs))
	}

	// The first plan after the import: no changes.
	plan := func(what string) string {
		t.Helper()
		out, stderr, err := run(t, "plan", "--dir", repo, "--state", st, "--cloud-config", cloud, "--kubeconfig", kc)
		if err != nil || !strings.Contains(out, "No changes.") {
			t.Errorf("plan %s: exit %d, want no changes:\n%s\n%s", what, exitCode(err), out, stderr)
		}
		return out
	}
	plan("after the import")
	if w := wl.take(); len(w) > 0 {
		t.Errorf("plan wrote to Azure: %v", w)
	}

	// 3. Hand-over of team-a. Flux sets the blob service's policy
	// (detach-on-delete, from ASO's repository): refused, naming it and
	// Flux's manager; the objects set before it stay set.
	policyOf := func(o map[string]any) (string, []string) {
		u := unstructured.Unstructured{Object: o}
		live := c.get(t, u.GetAPIVersion(), u.GetKind(), u.GetNamespace(), u.GetName())
		var managers []string
		for _, mf := range live.GetManagedFields() {
			if mf.FieldsV1 != nil && strings.Contains(string(mf.FieldsV1.Raw), aso.AnnotationReconcilePolicy) {
				managers = append(managers, mf.Manager)
			}
		}
		return live.GetAnnotations()[aso.AnnotationReconcilePolicy], managers
	}
	out, stderr, err = run(t, "handover", "-n", "team-a", "--dir", repo, "--state", st, "--cloud-config", cloud, "--kubeconfig", kc)
	if exitCode(err) != 1 || !strings.Contains(err.Error(), "StorageAccountsBlobService team-a/teamastorage01-blob") ||
		!strings.Contains(err.Error(), "kustomize-controller") {
		t.Fatalf("handover with Flux setting a policy: exit %d (%v), want 1 naming the object and the manager\n%s\n%s", exitCode(err), err, out, stderr)
	}
	inState := stateResources(t, st)
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		if u.GetNamespace() != "team-a" {
			continue
		}
		p, _ := policyOf(o)
		key := record.ResourceKey("team-a", u.GroupVersionKind().Group, u.GetKind(), u.GetName())
		if _, held := inState[key]; p == string(aso.ReconcilePolicySkip) && !held {
			t.Errorf("%s says skip but gitaso's state does not hold it: managed by no one", key)
		}
	}
	// Flux applies ASO's repository without the annotation; handover again.
	for _, o := range objs {
		u := unstructured.Unstructured{Object: deepCopyJSON(t, o)}
		if u.GetName() == "teamastorage01-blob" {
			u.SetAnnotations(nil)
			c.fluxApplies(t, u.Object)
		}
	}
	out, stderr, err = run(t, "handover", "-n", "team-a", "--dir", repo, "--state", st, "--cloud-config", cloud, "--kubeconfig", kc)
	if err != nil {
		t.Fatalf("handover: %v\n%s\n%s", err, out, stderr)
	}
	teamA := 0
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		if u.GetNamespace() != "team-a" {
			if p, _ := policyOf(o); p != "" {
				t.Errorf("handover of team-a set %s's policy to %q", u.GetName(), p)
			}
			continue
		}
		teamA++
		if p, m := policyOf(o); p != string(aso.ReconcilePolicySkip) || len(m) != 1 || m[0] != "gitaso" {
			t.Errorf("%s after handover: policy %q set by %v, want skip by gitaso", u.GetName(), p, m)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d of %d ASO objects of namespace team-a now say", teamA, teamA)) {
		t.Errorf("handover output:\n%s", out)
	}
	if w := wl.take(); len(w) > 0 {
		t.Errorf("handover wrote to Azure: %v", w)
	}
	plan("after the hand-over")

	// The way back: team-a's ASO objects written, given back, detached.
	back := filepath.Join(dir, "back")
	out, stderr, err = run(t, "export", "-n", "team-a", "--dir", repo, "--state", st, "--kubeconfig", kc, "--out", back)
	if err != nil {
		t.Fatalf("export: %v\n%s\n%s", err, out, stderr)
	}
	if w := wl.take(); len(w) > 0 {
		t.Errorf("export wrote to Azure: %v", w)
	}
	exported := readTree(t, back)
	for _, o := range objs {
		u := unstructured.Unstructured{Object: o}
		if u.GetNamespace() != "team-a" {
			continue
		}
		g, _, _ := strings.Cut(u.GroupVersionKind().Group, ".")
		f := "team-a/" + strings.ToLower(g+"-"+u.GetKind()) + "-" + u.GetName() + ".yaml"
		var got map[string]any
		if err := yaml.Unmarshal([]byte(exported[f]), &got); err != nil || got["kind"] != u.GetKind() {
			t.Errorf("%s not exported (%v): %v", f, err, keysOf(exported))
		}
		p, m := policyOf(o)
		want := u.GetAnnotations()[aso.AnnotationReconcilePolicy] // as the manifest says
		if p != want {
			t.Errorf("%s given back with policy %q (managers %v), want %q", u.GetName(), p, m, want)
		}
	}
	for k := range stateResources(t, st) {
		if strings.HasPrefix(k, "team-a/") {
			t.Errorf("%s still in the state after export", k)
		}
	}
	// Without team-a in gitaso's repository, nothing is deleted.
	if err := os.RemoveAll(filepath.Join(repo, "team-a")); err != nil {
		t.Fatal(err)
	}
	write(t, repo, "kustomization.yaml", "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- platform\n")
	plan("without team-a")
	if w := wl.take(); len(w) > 0 {
		t.Errorf("the way back wrote to Azure: %v", w)
	}
}

func deepCopyJSON(t *testing.T, o map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(o)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// installASOCRDs installs CRDs for the onboarding example's kinds (a
// schema that keeps every field, the status subresource), until
// internal/kubetest makes them from the catalog.
func installASOCRDs(t *testing.T, env *kubetest.Env) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	crds := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	snap, err := source.NewDir("../../examples", "onboarding").Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var names []string
	for _, o := range snap.Objects {
		if !aso.IsASOGroup(o.Group()) || seen[o.Group()+"/"+o.Kind()] {
			continue
		}
		seen[o.Group()+"/"+o.Kind()] = true
		plural := strings.ToLower(o.Kind()) + "s"
		name := plural + "." + o.Group()
		names = append(names, name)
		crd := map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"group": o.Group(), "scope": "Namespaced",
				"names": map[string]any{"kind": o.Kind(), "plural": plural, "singular": strings.ToLower(o.Kind()), "listKind": o.Kind() + "List"},
				"versions": []any{map[string]any{"name": o.Version(), "served": true, "storage": true,
					"subresources": map[string]any{"status": map[string]any{}},
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": map[string]any{
						"spec":   map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
						"status": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true},
					}}}}},
			},
		}
		if _, err := crds.Create(t.Context(), &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
	}
	for _, n := range names {
		for i := 0; ; i++ {
			u, err := crds.Get(t.Context(), n, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if established(u) {
				break
			}
			if i > 600 {
				t.Fatalf("CRD %s not established", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func established(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}
