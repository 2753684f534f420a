package render

import (
	"context"
	"fmt"
	"testing"

	"github.com/gitaso/gitaso/source"
)

// benchObjects is the number of objects the benchmarks render.
const benchObjects = 5000

// benchFiles returns benchObjects objects in 2,500 files of two documents
// each (a storage account with variables in five fields, and a federated
// credential with one), plus the platform-vars ConfigMap they read.
func benchFiles() []source.File {
	files := []source.File{{Path: "config/platform-vars.yaml", Data: []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: platform-vars
  namespace: config-cluster-flux
data:
  ENVIRONMENT: snd
  LOCATION: uksouth
  SUBSCRIPTION_ID: 55f3b8c6-6800-41c7-a40d-2adb5e4e1bd1
  CLUSTER_OIDC: https://uksouth.oic.prod-aks.azure.com/6f504113/e1f44edd/
  TEAM_MI_PREFIX: sndadpinfmid1401
`)}}
	for i := range benchObjects / 2 {
		ns := fmt.Sprintf("team-%02d", i%50)
		files = append(files, source.File{Path: fmt.Sprintf("teams/%s/app-%04d.yaml", ns, i), Data: fmt.Appendf(nil, `# storage for service %[1]d
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata:
  name: sa%[1]d
  namespace: %[2]s
spec:
  azureName: ${TEAM_MI_PREFIX}sa%[1]d
  location: ${LOCATION:=westeurope}
  kind: StorageV2
  sku:
    name: Standard_LRS
  owner:
    armId: /subscriptions/${SUBSCRIPTION_ID}/resourceGroups/rg-%[2]s
  tags:
    environment: ${ENVIRONMENT}
    cost-center: "${COST_CENTER:=platform}"
  minimumTlsVersion: TLS1_2
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: FederatedIdentityCredential
metadata:
  name: fic%[1]d
  namespace: %[2]s
spec:
  owner:
    name: id-%[2]s
  audiences:
    - api://AzureADTokenExchange
  issuer: ${CLUSTER_OIDC}
  subject: system:serviceaccount:%[2]s:app-%[1]d
`, i, ns)})
	}
	return files
}

func benchRenderer(b *testing.B) *Renderer {
	ref, _ := ParseRef("config-cluster-flux/platform-vars")
	r, err := New(Options{Substitute: true, Strict: true, SubstituteFrom: []Ref{ref}})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// BenchmarkSubstitute renders (substitutes) 5,000 objects.
func BenchmarkSubstitute(b *testing.B) {
	files := benchFiles()
	r := benchRenderer(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(ctx, files); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/benchObjects, "µs/object")
}

// BenchmarkBuild compares source.Build of the 5,000 objects without a
// renderer and with substitution, to show what substitution adds to a
// snapshot.
func BenchmarkBuild(b *testing.B) {
	files := benchFiles()
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		r    source.Renderer
	}{{"plain", nil}, {"substitute", benchRenderer(b)}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				snap, err := source.Build(ctx, "rev", files, bc.r)
				if err != nil {
					b.Fatal(err)
				}
				if len(snap.Objects) != benchObjects+1 {
					b.Fatalf("%d objects", len(snap.Objects))
				}
			}
		})
	}
}

// BenchmarkKustomize builds the overlay of testdata/kustomize (base +
// overlay with patches and commonLabels) and substitutes its output.
func BenchmarkKustomize(b *testing.B) {
	files, err := source.NewDir("testdata/kustomize", "deploy").Files(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	ref, _ := ParseRef("app-prod/app-vars")
	r, err := New(Options{Kustomize: true, KustomizeDirs: []string{"deploy/overlays/prod"}, Substitute: true, SubstituteFrom: []Ref{ref}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Render(context.Background(), files); err != nil {
			b.Fatal(err)
		}
	}
}
