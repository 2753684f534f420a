package cluster_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/internal/kubetest"
)

const (
	rgID  = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/team-a-rg"
	uaiID = rgID + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-a-identity"
)

// createASO creates an ASO object and, when status is set, writes it
// through the status subresource as ASO does.
func createASO(t *testing.T, dc dynamic.Interface, gvr schema.GroupVersionResource, obj map[string]any, status map[string]any) {
	t.Helper()
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: obj}
	ri := dc.Resource(gvr).Namespace(u.GetNamespace())
	got, err := ri.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, u.GetNamespace(), u.GetName(), err)
	}
	if status != nil {
		got.Object["status"] = status
		if _, err := ri.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status of %s/%s: %v", u.GetNamespace(), u.GetName(), err)
		}
	}
}

func meta(ns, name string, labels map[string]any, ann map[string]any) map[string]any {
	m := map[string]any{"namespace": ns, "name": name}
	if labels != nil {
		m["labels"] = labels
	}
	if ann != nil {
		m["annotations"] = ann
	}
	return m
}

func TestListASOObjects(t *testing.T) {
	env := kubetest.Start(t)
	env.InstallASOCRDs(t, "resources.azure.com/ResourceGroup", "managedidentity.azure.com/UserAssignedIdentity",
		"storage.azure.com/StorageAccount")
	env.Namespace(t, "platform")
	env.Namespace(t, "team-a")
	env.Namespace(t, "team-b")
	dc := dynamic.NewForConfigOrDie(env.Config)
	rg := schema.GroupVersionResource{Group: "resources.azure.com", Version: "v1api20200601", Resource: "resourcegroups"}
	uai := schema.GroupVersionResource{Group: "managedidentity.azure.com", Version: "v1api20230131", Resource: "userassignedidentities"}

	createASO(t, dc, rg, map[string]any{
		"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
		"metadata": meta("platform", "team-a-rg", map[string]any{"team": "a"}, nil),
		"spec":     map[string]any{"location": "westeurope"},
	}, map[string]any{
		"id": rgID,
		"conditions": []any{map[string]any{"type": "Ready", "status": "True", "severity": "",
			"reason": "Succeeded", "observedGeneration": int64(1), "lastTransitionTime": "2026-11-28T09:00:00Z"}},
	})
	createASO(t, dc, uai, map[string]any{
		"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
		"metadata": meta("platform", "team-a-identity", map[string]any{"team": "a"},
			map[string]any{aso.AnnotationReconcilePolicy: "detach-on-delete"}),
		"spec": map[string]any{"location": "westeurope", "owner": map[string]any{"name": "team-a-rg"}},
	}, map[string]any{
		"id": uaiID,
		"conditions": []any{map[string]any{"type": "Ready", "status": "False", "severity": "Warning",
			"reason": "AuthorizationFailed", "message": "403 from ARM", "observedGeneration": int64(1)}},
	})
	createASO(t, dc, rg, map[string]any{
		"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
		"metadata": meta("team-a", "skipped-rg", map[string]any{"team": "a"},
			map[string]any{aso.AnnotationReconcilePolicy: "skip"}),
		"spec": map[string]any{"location": "westeurope"},
	}, nil)
	createASO(t, dc, rg, map[string]any{
		"apiVersion": "resources.azure.com/v1api20200601", "kind": "ResourceGroup",
		"metadata": meta("team-b", "team-b-rg", map[string]any{"team": "b"},
			map[string]any{aso.AnnotationReconcilePolicy: "sometimes"}),
		"spec": map[string]any{"location": "westeurope"},
	}, nil)

	cl, err := cluster.FromConfig(env.Config, cluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	res, err := cl.ASOResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range res {
		if _, ok := aso.Lookup(r.Group, r.Version, r.Kind); !ok {
			t.Errorf("%s read through %s, a version the catalog does not have", r.Kind, r.Version)
		}
		kinds = append(kinds, r.Group+"/"+r.Kind)
	}
	if want := "[managedidentity.azure.com/UserAssignedIdentity resources.azure.com/ResourceGroup storage.azure.com/StorageAccount]"; fmtSlice(kinds) != want {
		t.Errorf("ASO resources %v, want %s (once per kind)", kinds, want)
	}

	all, err := cl.ListASOObjects(ctx, cluster.ASOListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, o := range all {
		refs = append(refs, o.Ref())
	}
	if want := "[platform/UserAssignedIdentity/team-a-identity platform/ResourceGroup/team-a-rg team-a/ResourceGroup/skipped-rg team-b/ResourceGroup/team-b-rg]"; fmtSlice(refs) != want {
		t.Fatalf("all objects %v, want %s", refs, want)
	}
	uaiObj, rgObj, skipped, invalid := all[0], all[1], all[2], all[3]
	if rgObj.ARMID != rgID || rgObj.Policy != aso.ReconcilePolicyManage || rgObj.Ready.Status != "True" ||
		rgObj.Ready.Reason != "Succeeded" || rgObj.Ready.ObservedGeneration != 1 || rgObj.Owner != nil {
		t.Errorf("resource group view %+v", rgObj)
	}
	if rgObj.Catalog == nil || rgObj.Catalog.ARMType != "Microsoft.Resources/resourceGroups" {
		t.Errorf("resource group catalog kind %v", rgObj.Catalog)
	}
	if uaiObj.ARMID != uaiID || uaiObj.Policy != aso.ReconcilePolicyDetachOnDelete || uaiObj.Ready.Status != "False" ||
		uaiObj.Ready.Severity != "Warning" || uaiObj.Ready.Message != "403 from ARM" ||
		uaiObj.Owner == nil || uaiObj.Owner.Name != "team-a-rg" {
		t.Errorf("identity view %+v owner %+v", uaiObj, uaiObj.Owner)
	}
	if skipped.ARMID != "" || skipped.Policy != aso.ReconcilePolicySkip || skipped.Ready.Status != "" {
		t.Errorf("skipped view %+v", skipped)
	}
	if invalid.Policy != aso.ReconcilePolicyManage || invalid.PolicyError == "" {
		t.Errorf("an invalid policy reads as manage with its error: %+v", invalid)
	}

	byNS, err := cl.ListASOObjects(ctx, cluster.ASOListOptions{Namespaces: []string{"team-a", "team-b"}, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(byNS) != 2 || byNS[0].Ref() != "team-a/ResourceGroup/skipped-rg" || byNS[1].Ref() != "team-b/ResourceGroup/team-b-rg" {
		t.Errorf("namespaces team-a, team-b: %v", byNS)
	}
	bySel, err := cl.ListASOObjects(ctx, cluster.ASOListOptions{LabelSelector: "team=a", PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(bySel) != 3 {
		t.Errorf("team=a selects %d objects, want 3", len(bySel))
	}
	if _, err := cl.ListASOObjects(ctx, cluster.ASOListOptions{LabelSelector: "team in (a"}); err == nil {
		t.Error("a malformed label selector is an error")
	}
}

func fmtSlice(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

// TestASOCRDsServeCatalogVersions: the CRDs kubetest makes from the catalog
// serve every catalogued version of a kind and ASO's storage variants.
func TestASOCRDsServeCatalogVersions(t *testing.T) {
	crd, err := kubetest.ASOCRD("storage.azure.com", "StorageAccount")
	if err != nil {
		t.Fatal(err)
	}
	var stored int
	names := map[string]bool{}
	for _, v := range crd.Spec.Versions {
		names[v.Name] = true
		if v.Storage {
			stored++
		}
	}
	if stored != 1 || !names["v1api20230101"] || !names["v1api20230101storage"] {
		t.Errorf("versions %v (stored %d)", names, stored)
	}
	if _, err := kubetest.ASOCRD("storage.azure.com", "NoSuchKind"); err == nil {
		t.Error("a kind the catalog lacks is an error")
	}
}
