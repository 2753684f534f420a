package cluster_test

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/kubetest"
)

// Policies set ASO's reconcile policy with server-side apply under
// gitaso's field manager: on the object as read (a changed or absent one
// is ErrObjectGone, and an apply never creates one), never forced over
// another manager's value (*PolicyConflictError naming it), and released
// so that the annotation goes when gitaso alone set it.
func TestPolicies(t *testing.T) {
	env := kubetest.Start(t)
	env.InstallASOCRDs(t, "resources.azure.com/ResourceGroup")
	env.Namespace(t, "team-a")
	ctx := context.Background()
	dc := dynamic.NewForConfigOrDie(env.Config)
	gvr := schema.GroupVersionResource{Group: "resources.azure.com", Version: "v1api20200601", Resource: "resourcegroups"}
	ri := dc.Resource(gvr).Namespace("team-a")
	apply := func(name, manager string, ann map[string]any) {
		t.Helper()
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
			"metadata": meta("team-a", name, nil, ann), "spec": map[string]any{"location": "westeurope"}}}
		if _, err := ri.Apply(ctx, name, u, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	apply("plain", "kustomize-controller", nil)
	apply("flux-policy", "kustomize-controller", map[string]any{aso.AnnotationReconcilePolicy: "manage"})
	cl, err := cluster.FromConfig(env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cluster.NewPolicies(cl)
	if err != nil {
		t.Fatal(err)
	}
	ref := func(name string) cluster.ObjectRef {
		return cluster.ObjectRef{APIVersion: "resources.azure.com/v1api20200601", Kind: "ResourceGroup", Namespace: "team-a", Name: name}
	}

	cur, err := p.Get(ctx, ref("plain"))
	if err != nil || cur == nil {
		t.Fatalf("get: %v, %v", cur, err)
	}
	got, err := p.Set(ctx, ref("plain"), cur, aso.ReconcilePolicySkip)
	if err != nil || cluster.PolicyOf(got) != "skip" {
		t.Fatalf("set skip: %v, policy %q", err, cluster.PolicyOf(got))
	}
	// A stale read is refused.
	if _, err := p.Set(ctx, ref("plain"), cur, aso.ReconcilePolicySkip); !errors.Is(err, cluster.ErrObjectGone) {
		t.Errorf("set on a stale read: %v, want ErrObjectGone", err)
	}
	// Released: the annotation gitaso alone set goes, the rest stays.
	got, err = p.Set(ctx, ref("plain"), got, "")
	if err != nil || cluster.PolicyOf(got) != "" || got.Object["spec"] == nil {
		t.Errorf("release: %v, policy %q, spec %v", err, cluster.PolicyOf(got), got.Object["spec"])
	}
	// Flux sets the policy: not taken over.
	cur, _ = p.Get(ctx, ref("flux-policy"))
	_, err = p.Set(ctx, ref("flux-policy"), cur, aso.ReconcilePolicySkip)
	var ce *cluster.PolicyConflictError
	if !errors.As(err, &ce) || !errors.Is(err, cluster.ErrPolicyOwned) || ce.Object.Name != "flux-policy" {
		t.Errorf("set over Flux's policy: %v, want a *PolicyConflictError", err)
	}
	if after, _ := p.Get(ctx, ref("flux-policy")); cluster.PolicyOf(after) != "manage" {
		t.Errorf("Flux's policy became %q", cluster.PolicyOf(after))
	}
	// An object deleted since it was read is not created again.
	apply("absent", "kustomize-controller", nil)
	read, _ := p.Get(ctx, ref("absent"))
	if err := ri.Delete(ctx, "absent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Set(ctx, ref("absent"), read, aso.ReconcilePolicySkip); !errors.Is(err, cluster.ErrObjectGone) {
		t.Errorf("set on an absent object: %v, want ErrObjectGone", err)
	}
	if u, err := p.Get(ctx, ref("absent")); err != nil || u != nil {
		t.Errorf("the absent object: %v, %v: an apply created it", u, err)
	}
}
