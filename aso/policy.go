package aso

import "fmt"

// AnnotationReconcilePolicy is ASO's per-resource reconcile policy
// annotation.
const AnnotationReconcilePolicy = "serviceoperator.azure.com/reconcile-policy"

// ReconcilePolicy is ASO's reconcile policy: what the operator may do to a
// resource in Azure (ASO's ReconcilePolicy, with its AllowsDelete and
// AllowsModify).
type ReconcilePolicy string

// ASO's reconcile policies.
const (
	// ReconcilePolicyManage creates, updates and deletes the resource.
	ReconcilePolicyManage ReconcilePolicy = "manage"
	// ReconcilePolicySkip only reads the resource: never writes, never
	// deletes.
	ReconcilePolicySkip ReconcilePolicy = "skip"
	// ReconcilePolicyDetachOnDelete creates and updates the resource but
	// leaves it in Azure when its manifest goes.
	ReconcilePolicyDetachOnDelete ReconcilePolicy = "detach-on-delete"
)

// ParseReconcilePolicy reads a reconcile policy as ASO spells it; an
// unknown value is an error naming the three.
func ParseReconcilePolicy(s string) (ReconcilePolicy, error) {
	switch p := ReconcilePolicy(s); p {
	case ReconcilePolicyManage, ReconcilePolicySkip, ReconcilePolicyDetachOnDelete:
		return p, nil
	}
	return "", fmt.Errorf("unknown reconcile policy %q (want manage, skip or detach-on-delete)", s)
}

// AllowsDelete reports whether the policy lets the resource be deleted in
// Azure when its manifest goes (manage only).
func (p ReconcilePolicy) AllowsDelete() bool { return p == ReconcilePolicyManage }

// AllowsModify reports whether the policy lets the resource be created or
// changed in Azure (manage and detach-on-delete).
func (p ReconcilePolicy) AllowsModify() bool {
	return p == ReconcilePolicyManage || p == ReconcilePolicyDetachOnDelete
}
