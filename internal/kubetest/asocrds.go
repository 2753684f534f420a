package kubetest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/gitaso/gitaso/aso"
)

// InstallASOCRDs installs into the API server a CRD for each ASO kind
// named "group/Kind" (e.g. "resources.azure.com/ResourceGroup"), made from
// gitaso's catalog by ASOCRD, and waits until discovery serves them.
// Installing a kind twice is harmless.
func (e *Env) InstallASOCRDs(t testing.TB, kinds ...string) {
	t.Helper()
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(kinds))
	for _, gk := range kinds {
		group, kind, ok := strings.Cut(gk, "/")
		if !ok {
			t.Fatalf("ASO kind %q: want group/Kind, e.g. resources.azure.com/ResourceGroup", gk)
		}
		crd, err := ASOCRD(group, kind)
		if err != nil {
			t.Fatal(err)
		}
		crds = append(crds, crd)
	}
	if _, err := envtest.InstallCRDs(e.Config, envtest.CRDInstallOptions{CRDs: crds, MaxTime: 30 * time.Second}); err != nil {
		t.Fatalf("install ASO CRDs %v: %v", kinds, err)
	}
}

// ASOCRD returns a minimal CRD for an ASO kind, shaped as ASO's: named
// {plural}.{group}, namespaced, one served version per version the catalog
// has plus ASO's storage variant of each ({version}storage), the newest
// storage variant stored, a status subresource, and a structural schema
// that keeps every field (x-kubernetes-preserve-unknown-fields) rather than
// ASO's full one. No conversion webhook: the API server only relabels an
// object's apiVersion between versions, which is enough for tests that
// read the fields every version shares (owner, annotations, status).
func ASOCRD(group, kind string) (*apiextensionsv1.CustomResourceDefinition, error) {
	var versions []string
	for _, k := range aso.Kinds() { // sorted by version within group and kind
		if k.Group == group && k.Kind == kind {
			versions = append(versions, k.Version)
		}
	}
	if len(versions) == 0 {
		return nil, fmt.Errorf("ASO kind %s/%s: not in gitaso's catalog", group, kind)
	}
	plural := Plural(kind)
	keep := true
	obj := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"apiVersion": {Type: "string"},
			"kind":       {Type: "string"},
			"metadata":   {Type: "object"},
			"spec":       obj,
			"status":     obj,
		},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List",
				Categories: []string{"azure", strings.Split(group, ".")[0]},
			},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	newest := versions[len(versions)-1] + "storage"
	for _, v := range versions {
		for _, name := range []string{v, v + "storage"} {
			crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
				Name: name, Served: true, Storage: name == newest, Schema: schema,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			})
		}
	}
	return crd, nil
}

// Plural is the resource name of an ASO kind as ASO's CRDs spell it for the
// common English endings (ResourceGroup → resourcegroups, UserAssignedIdentity
// → userassignedidentities, NamespacesQueue → namespacesqueues).
func Plural(kind string) string {
	k := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(k, "y") && len(k) > 1 && !strings.ContainsRune("aeiou", rune(k[len(k)-2])):
		return k[:len(k)-1] + "ies"
	case strings.HasSuffix(k, "s"), strings.HasSuffix(k, "x"), strings.HasSuffix(k, "ch"), strings.HasSuffix(k, "sh"):
		return k + "es"
	}
	return k + "s"
}
