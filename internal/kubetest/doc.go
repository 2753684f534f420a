// Package kubetest starts a real Kubernetes API server (kube-apiserver and
// etcd, built from source by scripts/kube-binaries.sh) for tests that talk to
// a cluster: exports applied with server-side apply, credential Secrets read
// from the cluster, leader election, the chart's server-side dry run.
//
//	func TestExports(t *testing.T) {
//		env := kubetest.Start(t) // skips when the binaries are absent
//		cs := env.Clientset()
//		...
//	}
//
// Tests that need ASO's objects install CRDs made from gitaso's catalog
// (asocrds.go; no ASO file is committed): every catalogued version of the
// kind and ASO's storage variant of each, a status subresource and a schema
// that keeps every field:
//
//	env.InstallASOCRDs(t, "resources.azure.com/ResourceGroup", "storage.azure.com/StorageAccount")
//
// The binaries are looked up in $GITASO_KUBE_ASSETS, then in
// ~/.cache/gitaso/kube-v1.36.3 (where the script puts them). Without them a
// test is skipped with a message naming the script, unless
// GITASO_REQUIRE_KUBE=1 (CI), where it fails.
package kubetest
