package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	authzv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"github.com/gitaso/gitaso/internal/kubetest"
)

var update = flag.Bool("update", false, "rewrite manifests/gitaso.yaml from the chart")

const (
	chartDir     = "helm/gitaso"
	manifestFile = "manifests/gitaso.yaml"
	release      = "gitaso"
	namespace    = "gitaso"
)

// manifestValues are the values the plain manifests are rendered with: the
// defaults, but the API token Secret is the user's (a generated token would
// be the same for everyone who applies the file).
var manifestValues = map[string]any{"apiToken": map[string]any{"create": false}}

// haValues is a production-like configuration: three replicas with leader
// election, workload identity, exports limited to two namespaces.
var haValues = map[string]any{
	"replicas":         3,
	"leaderElection":   map[string]any{"enabled": true},
	"workloadIdentity": map[string]any{"enabled": true, "clientId": "00000000-0000-0000-0000-0000000000c1"},
	"azure": map[string]any{
		"subscriptionId": "00000000-0000-0000-0000-0000000000a1",
		"tenantId":       "00000000-0000-0000-0000-0000000000b1",
		"cloud":          map[string]any{"configMap": "gitaso-cloud", "caConfigMap": "gitaso-cloud-ca"},
	},
	"rbac":        map[string]any{"namespaces": []any{"team-a", "team-b"}},
	"persistence": map[string]any{"accessModes": []any{"ReadWriteMany"}},
	"git":         map[string]any{"repo": "https://git.example.com/platform/azure.git", "existingSecret": "gitaso-git", "caConfigMap": "git-ca"},
	"sops":        map[string]any{"ageKeySecret": "sops-age"},
	"webhook":     map[string]any{"existingSecret": "gitaso-webhook"},
	"networkPolicy": map[string]any{"ingressFrom": []any{map[string]any{
		"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "ingress-nginx"}},
	}}},
}

// render renders the chart as `helm template` does (client side, objects
// in install order) and returns the manifest text.
func render(t *testing.T, vals map[string]any) string {
	t.Helper()
	text, notes, err := renderChart(vals)
	if err != nil {
		t.Fatalf("render chart: %v", err)
	}
	if !strings.Contains(notes, "gitaso") {
		t.Errorf("NOTES.txt rendered %q", notes)
	}
	return text
}

func renderChart(vals map[string]any) (manifest, notes string, err error) {
	chrt, err := loader.Load(chartDir)
	if err != nil {
		return "", "", fmt.Errorf("load chart: %w", err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	if err := chartutil.ProcessDependenciesWithMerge(chrt, vals); err != nil {
		return "", "", err
	}
	rv, err := chartutil.ToRenderValues(chrt, vals, chartutil.ReleaseOptions{
		Name: release, Namespace: namespace, Revision: 1, IsInstall: true,
	}, caps)
	if err != nil {
		return "", "", err
	}
	files, err := engine.Engine{}.Render(chrt, rv)
	if err != nil {
		return "", "", err
	}
	notesFile := chrt.Name() + "/templates/NOTES.txt"
	notes = files[notesFile]
	delete(files, notesFile)
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return "", "", err
	}
	if len(hooks) > 0 {
		return "", "", fmt.Errorf("the chart has %d hooks; the plain manifests cannot express them", len(hooks))
	}
	var b strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", m.Name, m.Content)
	}
	return b.String(), notes, nil
}

// decode splits a multi-document manifest into objects.
func decode(t *testing.T, manifest string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(manifest), 4096)
	for {
		var m map[string]any
		err := d.Decode(&m)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decode rendered manifest: %v", err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

func kinds(objs []*unstructured.Unstructured) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName())
	}
	slices.Sort(ks)
	return ks
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetNamespace() == ns && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s/%s in %v", kind, ns, name, kinds(objs))
	return nil
}

func deployment(t *testing.T, objs []*unstructured.Unstructured) *appsv1.Deployment {
	t.Helper()
	var d appsv1.Deployment
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(find(t, objs, "Deployment", namespace, "gitaso").Object, &d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func TestRenderDefault(t *testing.T) {
	objs := decode(t, render(t, nil))
	want := []string{
		"ClusterRole//gitaso", "ClusterRoleBinding//gitaso", "Deployment/gitaso/gitaso",
		"NetworkPolicy/gitaso/gitaso", "PersistentVolumeClaim/gitaso/gitaso-state", "Secret/gitaso/gitaso-api-token",
		"Service/gitaso/gitaso", "ServiceAccount/gitaso/gitaso",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("objects\n got %v\nwant %v", got, want)
	}
	d := deployment(t, objs)
	checkSecurity(t, d)
	if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("one replica: strategy %s, want Recreate (the state volume is ReadWriteOnce)", d.Spec.Strategy.Type)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, a := range []string{"serve", "--listen=0.0.0.0:8080", "--in-cluster", "--state=/var/lib/gitaso/state.db",
		"--api-token-file=/etc/gitaso/api-token/token", "--cluster-instance=gitaso", "--cluster-exports=true",
		"--git-timeout=1m", "--unready-after=5m"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %q lack %s", c.Args, a)
		}
	}
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--leader-elect") {
			t.Errorf("one replica without leader election has %s", a)
		}
	}
	if p := c.LivenessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/healthz" {
		t.Errorf("liveness probe %+v", p)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/readyz" {
		t.Errorf("readiness probe %+v", p)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v", c.Resources)
	}
	cr := find(t, objs, "ClusterRole", "", "gitaso")
	rules, _, _ := unstructured.NestedSlice(cr.Object, "rules")
	if len(rules) != 1 {
		t.Errorf("ClusterRole rules %v: want one rule on configmaps and secrets", rules)
	}
}

func TestRenderHA(t *testing.T) {
	objs := decode(t, render(t, haValues))
	want := []string{
		"Deployment/gitaso/gitaso",
		"NetworkPolicy/gitaso/gitaso", "PersistentVolumeClaim/gitaso/gitaso-state", "PodDisruptionBudget/gitaso/gitaso",
		"Role/gitaso/gitaso-leader-election", "Role/team-a/gitaso", "Role/team-b/gitaso",
		"RoleBinding/gitaso/gitaso-leader-election", "RoleBinding/team-a/gitaso", "RoleBinding/team-b/gitaso",
		"Secret/gitaso/gitaso-api-token", "Service/gitaso/gitaso", "ServiceAccount/gitaso/gitaso",
	}
	if got := kinds(objs); !slices.Equal(got, want) {
		t.Errorf("objects\n got %v\nwant %v", got, want)
	}
	d := deployment(t, objs)
	checkSecurity(t, d)
	if *d.Spec.Replicas != 3 || d.Spec.Template.Labels["azure.workload.identity/use"] != "true" {
		t.Errorf("replicas %d, pod labels %v", *d.Spec.Replicas, d.Spec.Template.Labels)
	}
	c := d.Spec.Template.Spec.Containers[0]
	for _, a := range []string{"--leader-elect", "--leader-election-namespace=gitaso", "--leader-election-id=gitaso",
		"--advertise-url=http://$(POD_IP):8080", "--git-password-file=/etc/gitaso/git/password",
		"--git-ca-file=/etc/gitaso/git-ca/ca.crt", "--sops-age-key-file=/etc/gitaso/sops/age.agekey",
		"--webhook-secret-file=/etc/gitaso/webhook/secret", "--cloud-config=/etc/gitaso/cloud/cloud.json",
		"--cluster-namespaces=team-a,team-b"} {
		if !slices.Contains(c.Args, a) {
			t.Errorf("args %q lack %s", c.Args, a)
		}
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		env[e.Name] = e
	}
	if e := env["POD_IP"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "status.podIP" {
		t.Errorf("POD_IP %+v", e)
	}
	for k, v := range map[string]string{
		"USE_WORKLOAD_IDENTITY_AUTH": "true", "AZURE_CLIENT_ID": "00000000-0000-0000-0000-0000000000c1",
		"AZURE_TENANT_ID": "00000000-0000-0000-0000-0000000000b1", "AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-0000000000a1",
		"GITASO_CA_FILE": "/etc/gitaso/cloud-ca/ca.crt",
	} {
		if env[k].Value != v {
			t.Errorf("env %s = %q, want %q", k, env[k].Value, v)
		}
	}
	sa := find(t, objs, "ServiceAccount", namespace, "gitaso")
	if sa.GetAnnotations()["azure.workload.identity/client-id"] != "00000000-0000-0000-0000-0000000000c1" {
		t.Errorf("service account annotations %v", sa.GetAnnotations())
	}
	pdb := find(t, objs, "PodDisruptionBudget", namespace, "gitaso")
	if v, _, _ := unstructured.NestedFieldNoCopy(pdb.Object, "spec", "minAvailable"); fmt.Sprint(v) != "1" {
		t.Errorf("PDB minAvailable %v", v)
	}
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
		t.Errorf("three replicas: strategy %s", d.Spec.Strategy.Type)
	}
}

func TestRenderRefuses(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"replicas without leader election": {"replicas": 2},
		"replicas on ReadWriteOnce":        {"replicas": 2, "leaderElection": map[string]any{"enabled": true}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := renderChart(vals); err == nil {
				t.Errorf("rendered")
			} else {
				t.Log(err)
			}
		})
	}
}

// checkSecurity asserts the pod runs as a non-root user with a read-only
// root file system and nothing to escalate with.
func checkSecurity(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ps := d.Spec.Template.Spec.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v", ps)
	}
	if len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("containers %d", len(d.Spec.Template.Spec.Containers))
	}
	c := d.Spec.Template.Spec.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
		sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 ||
		(sc.Privileged != nil && *sc.Privileged) {
		t.Errorf("container security context %+v", sc)
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = true
	}
	for _, p := range []string{"/tmp", "/var/lib/gitaso", "/var/cache/gitaso"} {
		if !mounts[p] {
			t.Errorf("no writable volume at %s (the root file system is read-only)", p)
		}
	}
}

func TestManifests(t *testing.T) {
	var b bytes.Buffer
	b.WriteString("# gitaso, plain manifests: deploy/helm/gitaso rendered with its default values (release gitaso,\n")
	b.WriteString("# namespace gitaso) but apiToken.create=false. Generated; do not edit: after a chart change run\n")
	b.WriteString("#   go test -tags kustomize_disable_go_plugin_support ./deploy -run TestManifests -update\n")
	b.WriteString("# Before applying: kubectl create namespace gitaso, create the Secret gitaso-api-token (key token),\n")
	b.WriteString("# and edit --repo (docs/deploy.md).\n")
	b.WriteString(render(t, manifestValues))
	if *update {
		if err := os.WriteFile(manifestFile, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, b.Bytes()) {
		t.Errorf("%s differs from the chart's rendering: run go test ./deploy -run TestManifests -update", manifestFile)
	}
	objs := decode(t, string(got))
	for _, o := range objs {
		if o.GetKind() == "Secret" {
			t.Errorf("the plain manifests hold a Secret %s", o.GetName())
		}
	}
	checkSecurity(t, deployment(t, objs))
}

// dryRun applies one object with server-side apply, dryRun=All and strict
// field validation (an unknown or duplicated field is an error).
func dryRun(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, o *unstructured.Unstructured) error {
	gvk := o.GroupVersionKind()
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
	}
	data, err := json.Marshal(o)
	if err != nil {
		return err
	}
	force := true
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{
		FieldManager: "gitaso-deploy-test", Force: &force, DryRun: []string{metav1.DryRunAll},
		FieldValidation: metav1.FieldValidationStrict,
	})
	return err
}

// TestDryRun applies every object of the chart (default and HA values) and
// of the plain manifests to a real API server with a server-side dry run.
func TestDryRun(t *testing.T) {
	env := kubetest.Start(t)
	for _, ns := range []string{namespace, "team-a", "team-b"} {
		env.Namespace(t, ns)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(env.Clientset().Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	manifest, err := os.ReadFile(manifestFile)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, c := range []struct {
		name, text string
		objects    int
	}{
		{"default", render(t, nil), 8},
		{"ha", render(t, haValues), 13},
		{"manifests", string(manifest), 7},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := decode(t, c.text)
			if len(objs) != c.objects {
				t.Errorf("%d objects, want %d: %v", len(objs), c.objects, kinds(objs))
			}
			for _, o := range objs {
				if o.GetNamespace() == "" && o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
					t.Errorf("%s %s has no namespace (the plain manifests must name it)", o.GetKind(), o.GetName())
				}
				if err := dryRun(ctx, dyn, mapper, o); err != nil {
					t.Errorf("server-side dry run of %s %s/%s: %v", o.GetKind(), o.GetNamespace(), o.GetName(), err)
				}
			}
		})
	}
	// The dry run is strict: a field the API does not know is refused.
	t.Run("refuses unknown fields", func(t *testing.T) {
		o := find(t, decode(t, render(t, nil)), "Deployment", namespace, "gitaso")
		if err := unstructured.SetNestedField(o.Object, true, "spec", "template", "spec", "containers0"); err != nil {
			t.Fatal(err)
		}
		if err := dryRun(ctx, dyn, mapper, o); err == nil || !strings.Contains(err.Error(), "containers0") {
			t.Errorf("a Deployment with spec.template.spec.containers0: %v", err)
		}
	})
}

// TestRBAC creates the HA rendering's service account and RBAC objects for
// real and asks the API server what the service account may do: exports
// only in the listed namespaces, the Lease only in the release namespace,
// nothing else.
func TestRBAC(t *testing.T) {
	env := kubetest.Start(t)
	for _, ns := range []string{namespace, "team-a", "team-b", "other"} {
		env.Namespace(t, ns)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(env.Clientset().Discovery())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	ctx := context.Background()
	for _, o := range decode(t, render(t, haValues)) {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
		default:
			continue
		}
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if o.GetNamespace() != "" {
			ri = dyn.Resource(m.Resource).Namespace(o.GetNamespace())
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: "gitaso-deploy-test", Force: true}); err != nil {
			t.Fatalf("apply %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	user := "system:serviceaccount:" + namespace + ":gitaso"
	cases := []struct {
		attr  authzv1.ResourceAttributes
		allow bool
	}{
		{authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Resource: "secrets"}, true},
		{authzv1.ResourceAttributes{Namespace: "team-b", Verb: "patch", Resource: "configmaps"}, true},
		{authzv1.ResourceAttributes{Namespace: "team-b", Verb: "delete", Resource: "secrets"}, true},
		{authzv1.ResourceAttributes{Namespace: "team-a", Verb: "watch", Resource: "secrets"}, true},
		{authzv1.ResourceAttributes{Verb: "list", Resource: "secrets"}, false}, // --cluster-namespaces: no cluster-wide read
		{authzv1.ResourceAttributes{Verb: "watch", Resource: "secrets"}, false},
		{authzv1.ResourceAttributes{Namespace: "other", Verb: "create", Resource: "secrets"}, false},
		{authzv1.ResourceAttributes{Namespace: "other", Verb: "delete", Resource: "configmaps"}, false},
		{authzv1.ResourceAttributes{Namespace: namespace, Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}, true},
		{authzv1.ResourceAttributes{Namespace: namespace, Verb: "update", Group: "coordination.k8s.io", Resource: "leases"}, true},
		{authzv1.ResourceAttributes{Namespace: namespace, Verb: "delete", Group: "coordination.k8s.io", Resource: "leases"}, false},
		{authzv1.ResourceAttributes{Namespace: "other", Verb: "create", Group: "coordination.k8s.io", Resource: "leases"}, false},
		{authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Resource: "pods"}, false},
		{authzv1.ResourceAttributes{Namespace: "team-a", Verb: "create", Group: "rbac.authorization.k8s.io", Resource: "roles"}, false},
		{authzv1.ResourceAttributes{Verb: "list", Resource: "namespaces"}, false},
	}
	cs := env.Clientset()
	for _, c := range cases {
		attr := c.attr
		sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			ResourceAttributes: &attr,
		}}
		got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Allowed != c.allow {
			t.Errorf("%s %s/%s in %q: allowed %v, want %v", attr.Verb, attr.Group, attr.Resource, attr.Namespace, got.Status.Allowed, c.allow)
		}
	}
	// The OIDC issuer (--cluster-oidc-var) comes from the discovery document,
	// which Kubernetes lets every service account read.
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: user, Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: "/.well-known/openid-configuration", Verb: "get"},
	}}
	got, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !got.Status.Allowed {
		t.Errorf("the service account may not read /.well-known/openid-configuration: %s", got.Status.Reason)
	}
}
