// Package planner turns a parsed snapshot of ASO manifests into a Plan.
//
// Build resolves every ASO object against the facts catalog (package
// aso): its kind, azureName, ARM ID, owner and every reference,
// secret and config map it uses, and builds the dependency graph. A commit
// with any input error (unknown kind, missing owner or reference, cycle) is
// refused whole: Build returns a diag.List naming every problem.
//
// Plan compares the graph (desired, from Git) with what gitaso last applied
// (state) and, when given, what ARM holds now (observed), and decides an
// Action per resource:
//
//	create   not in state, not in Azure
//	adopt    not in state, already in Azure (ASO adopts; gitaso PUTs the manifest)
//	update   the manifest changed since the last apply
//	drift    the manifest is unchanged but Azure differs in a field the manifest sets
//	no-op    nothing to do
//	observe  reconcile-policy: skip (read only)
//	delete   removed from Git (reverse DAG order; children of a deleted
//	         resource group are removed by ARM's cascade, not one by one)
//	detach   removed from Git with reconcile-policy: detach-on-delete
//
// A Plan is plain data and serialises to the documented JSON interface
// (see Plan). Values known only after another resource is applied (a
// *FromConfig fed by an identity's operatorSpec.configMaps) show as
// "(known after apply)" and are resolved by the executor through
// Resource.Body.
//
// Secret values never reach a plan: a value a secretRef reads is replaced by
// "(sensitive value)", and a value substitution took from a Secret
// (manifest.Object.Secrets), wherever it lands, by "(sensitive value from
// Secret namespace/name)" in the request body, the manifest, the config map
// inputs and the changes (secrets.go); a change of either is found by the
// hash of the whole request and shown masked.
//
// The planner never talks to Azure: the import-boundary test keeps it free of
// the Azure SDK and of the executor.
package planner
