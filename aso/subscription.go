package aso

import (
	"fmt"
	"strings"
)

// ReasonSubscriptionMismatch is ASO's Ready reason for a resource whose ARM
// ID lies in another subscription than its credential's.
const ReasonSubscriptionMismatch = "SubscriptionMismatch"

// SubscriptionMismatchError is ASO's SubscriptionMismatch: the resource's ARM
// ID is in Subscription, its credential Credential is for
// CredentialSubscription. ASO refuses the resource (an Error, not retried).
type SubscriptionMismatchError struct {
	ARMID, Subscription                string
	Credential, CredentialSubscription string
}

func (e *SubscriptionMismatchError) Error() string {
	return fmt.Sprintf("%s: the resource's ARM ID %s is in subscription %s but its credential %s is for subscription %s",
		ReasonSubscriptionMismatch, e.ARMID, e.Subscription, e.Credential, e.CredentialSubscription)
}

// CheckSubscription is ASO's rule that a resource is applied in its
// credential's subscription: a *SubscriptionMismatchError when armID lies in
// another subscription than subscription (the credential's), nil when they
// agree or either is unknown (a tenant-level ID, a subscription not known).
func CheckSubscription(armID, credential, subscription string) *SubscriptionMismatchError {
	sub := SubscriptionOf(armID)
	if sub == "" || subscription == "" || strings.EqualFold(sub, subscription) {
		return nil
	}
	return &SubscriptionMismatchError{ARMID: armID, Subscription: sub, Credential: credential, CredentialSubscription: subscription}
}

// SubscriptionOf returns the subscription of an ARM ID, "" for tenant-level
// IDs.
func SubscriptionOf(id string) string {
	// The second and third segments, as strings.Split(id, "/")[1:3] gives
	// them, without splitting the whole ID.
	_, rest, ok := strings.Cut(id, "/")
	if !ok {
		return ""
	}
	first, rest, ok := strings.Cut(rest, "/")
	if !ok || !strings.EqualFold(first, "subscriptions") {
		return ""
	}
	sub, _, _ := strings.Cut(rest, "/")
	return sub
}
