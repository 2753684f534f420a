// Package executor applies a planner.Plan to Azure.
//
// Writes run in dependency order on a bounded pool of goroutines: a resource
// starts when everything it depends on has finished, independent branches run
// in parallel, and a failure skips only the failed resource's descendants
// (their Ready condition says why: WaitingForOwner, ReferenceNotFound,
// ConfigMapNotFound or SecretNotFound) while the rest proceeds. Deletions run
// after the writes in reverse dependency order, as the plan orders them
// (Resource.DeleteAfter, from the edges state recorded when the resources
// were applied); resources that ARM removes with a deleted parent get no
// DELETE of their own.
//
// The plan is plain data: it may have been read back from JSON. Values known
// only after apply (a RoleAssignment's principalIdFromConfig fed by an
// identity's operatorSpec.configMaps) are resolved by planner.Resolve, which
// builds the request again from the resource's manifest and inputs with the
// exports produced so far, just before its PUT; Secrets come from the
// planner.Values given to Apply, never from the plan.
// ASO's per-kind hooks come from aso's registry (aso.HooksFor): before a
// PUT, the pre-reconcile checks read the resource or its owner and hold the
// PUT that ARM would refuse (Ready False, ReconciliationBlocked, a Warning
// retried by the next run), then the payload modifiers rewrite the body
// (Key Vault createMode, the child collections VNet/NSG/route table/load
// balancer/scale set PUTs must keep); after it, the post-reconcile check
// keeps Ready False while the resource waits for something outside the PUT
// (PostReconciliationFailure) and the success handler runs; deletions use
// the kind's custom delete; ARM errors are classified per kind (retryable:
// Warning, fatal: Error). After a write, aso.Exports computes the
// operatorSpec exports from ARM's answer (and the kind's listKeys-style
// calls), including configMapExpressions/secretExpressions in CEL; the
// executor writes them and sets FailedWritingAdditionalKubernetesObjects
// when some fail. docs/hooks.md lists every ASO hook and what gitaso does
// with it.
//
// The executor returns a Result; the reconcile loop records it in state in
// one transaction.
package executor
