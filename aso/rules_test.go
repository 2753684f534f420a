package aso

import (
	"errors"
	"strings"
	"testing"
)

// ASO's reconcile policies: manage writes and deletes, detach-on-delete
// writes but never deletes, skip only reads; anything else is refused.
func TestReconcilePolicy(t *testing.T) {
	for _, tc := range []struct {
		in             string
		delete, modify bool
	}{
		{"manage", true, true},
		{"detach-on-delete", false, true},
		{"skip", false, false},
	} {
		p, err := ParseReconcilePolicy(tc.in)
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if p.AllowsDelete() != tc.delete || p.AllowsModify() != tc.modify {
			t.Errorf("%s: AllowsDelete %v AllowsModify %v, want %v %v", tc.in, p.AllowsDelete(), p.AllowsModify(), tc.delete, tc.modify)
		}
	}
	for _, bad := range []string{"", "Manage", "detach"} {
		if p, err := ParseReconcilePolicy(bad); err == nil || !strings.Contains(err.Error(), "want manage, skip or detach-on-delete") {
			t.Errorf("%q: %q, %v; want refused", bad, p, err)
		}
	}
}

// SubscriptionMismatch: an ARM ID in another subscription than the
// credential's is refused; case does not matter; an unknown side passes.
func TestCheckSubscription(t *testing.T) {
	const id = "/subscriptions/AAA/resourceGroups/rg"
	if m := CheckSubscription(id, "team-a/aso-cred", "bbb"); m == nil || m.Subscription != "AAA" || m.CredentialSubscription != "bbb" ||
		!strings.HasPrefix(m.Error(), "SubscriptionMismatch: the resource's ARM ID "+id+" is in subscription AAA but its credential team-a/aso-cred is for subscription bbb") {
		t.Errorf("mismatch: %v", m)
	}
	var target *SubscriptionMismatchError
	if err := error(CheckSubscription(id, "c", "bbb")); !errors.As(err, &target) {
		t.Errorf("not a *SubscriptionMismatchError: %v", err)
	}
	for _, tc := range [][2]string{{id, "aaa"}, {id, ""}, {"/providers/Microsoft.Management/managementGroups/x", "bbb"}, {"", "bbb"}} {
		if m := CheckSubscription(tc[0], "c", tc[1]); m != nil {
			t.Errorf("%q in %q: %v, want nil", tc[0], tc[1], m)
		}
	}
}

// The generic classification of an ARM code, and a kind's classifier over
// it: SQL's PasswordNotComplex is fatal only for a server; a VM's
// OperationNotAllowed is retried; codes no retry can fix are fatal for
// every kind.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		group, kind, code string
		want              Classification
	}{
		{"resources.azure.com", "ResourceGroup", "PropertyChangeNotAllowed", Fatal},
		{"resources.azure.com", "ResourceGroup", "Conflict", Retryable},
		{"sql.azure.com", "Server", "PasswordNotComplex", Fatal},
		{"resources.azure.com", "ResourceGroup", "PasswordNotComplex", Retryable},
		{"compute.azure.com", "VirtualMachine", "OperationNotAllowed", Retryable},
		{"compute.azure.com", "VirtualMachine", "InvalidParameter", Fatal},
	} {
		if got := Classify(tc.group, tc.kind, CloudError{Code: tc.code}); got != tc.want {
			t.Errorf("%s/%s %s: %s, want %s", tc.group, tc.kind, tc.code, got, tc.want)
		}
	}
}
