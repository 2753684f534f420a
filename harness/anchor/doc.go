// Package anchor is the side-by-side harness of issue 15: it runs the same ASO v2 manifests through Azure
// Service Operator's own controller (on a kube-apiserver and etcd) and through gitaso (`gitaso serve`), each
// against a fresh in-process ARM emulator with ARM's throttling, and reports
//
//   - speed: time until every resource is Ready (ASO: by watching the custom resources' Ready condition;
//     gitaso: by polling its API), ARM requests by kind, throttled requests, and the CPU time and peak memory
//     of every process each side needs (ASO's count includes etcd and kube-apiserver);
//   - fidelity by oracle: every PUT body each emulator received and every resource body it ended with,
//     compared resource by resource (WithWriteLog and Resources of package emulator).
//
// RunHandover (-handover, issue 28) is the migration instead: one emulator and one kube-apiserver, ASO's
// controller creating the workload, then gitaso's CLI importing, handing over, changing and exporting it, and ASO
// managing it again; the emulator's write log, with the principal of each write, proves that no resource is
// written by both in a phase and, with the objects' reconcile policies and gitaso's state, that none is left
// without a manager (handoverlog.go, tested without a cluster).
//
// The harness builds nothing of ASO. Its controller binary and the CRDs (controller-gen output for the groups
// a workload needs, plus the webhook configurations) are built by hand outside this repository and passed in
// (ASO_CONTROLLER, ASO_CRDS): the tool library's rule forbids committing a fetched repository's code, a binary
// built from it, or any recipe that builds it. kube-apiserver and etcd come from scripts/kube-binaries.sh.
//
//	res, err := anchor.Run(ctx, anchor.Options{Controller: ctrl, CRDs: crds, Gitaso: "bin/gitaso",
//		Workload: anchor.Conformance(shared), Out: "anchor-out"})
//
// It is run by `make aso-anchor` (not by `make test` or CI); docs/aso-anchor.md has the figures.
package anchor
