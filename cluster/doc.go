// Package cluster is gitaso's Kubernetes adapter, for gitaso running beside
// the cluster whose applications use what it creates. Like package azure it
// is an output and an input of reconcile; the planner never sees it, only the
// values it read.
//
// Outputs: every operatorSpec export (ConfigMaps, Secrets, CEL expressions)
// applied into the resource's namespace with server-side apply
// (fluxcd/pkg/ssa, field manager "gitaso"), labelled and annotated with the
// gitaso resource that owns it, removed when the export or its resource goes,
// never touching an object gitaso does not own.
//
// Inputs: ConfigMaps and Secrets for substituteFrom, the aso-credential and
// credential-from Secrets (read as ASO reads them, re-read when they change),
// the cluster's OIDC issuer.
//
// ASO's objects: ListASOObjects reads the ASO objects of the cluster (every
// kind of gitaso's catalog that discovery finds, once each, by namespaces
// and label selector) with a typed view of each (status.id, reconcile
// policy, Ready, owner), for plans beside ASO and for refusing what ASO
// manages.
//
// Coordination: the leader Lease (coordination.k8s.io) of each shard.
//
// Without a cluster configured (Connect with neither a kubeconfig nor
// in-cluster configuration), gitaso does none of this.
package cluster
