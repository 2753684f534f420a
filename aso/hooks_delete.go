package aso

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// ASO's custom deletes (api/apimanagement/customizations/product_extensions.go,
// api/subscription/customizations/alias_extensions.go) and Alias's success
// handler.

// The api-versions of the SDK clients ASO's custom deletes use.
const (
	// APIManagementAPIVersion is armapimanagement's (ProductClient.Delete).
	APIManagementAPIVersion = "2022-08-01"
	// SubscriptionAPIVersion is armsubscription's (Client.Cancel).
	SubscriptionAPIVersion = "2021-10-01"
)

func init() {
	register("apimanagement.azure.com", "Product").Delete = deleteProduct
	alias := register("subscription.azure.com", "Alias")
	alias.Delete = deleteAlias
	alias.Success = aliasSucceeded
}

// deleteProduct deletes an API Management product together with its
// subscriptions, as ASO does: DELETE {id}?deleteSubscriptions=true with
// If-Match: * (armapimanagement's ProductClient.Delete), then the plain
// DELETE (which finds nothing left).
func deleteProduct(ctx context.Context, arm ARM, t Target) error {
	q := url.Values{"deleteSubscriptions": {"true"}}
	h := http.Header{"If-Match": {"*"}}
	if err := arm.DeleteWith(ctx, t.ARMID, APIManagementAPIVersion, q, h); err != nil {
		return fmt.Errorf("failed to delete product %q: %w", t.AzureName, err)
	}
	return arm.Delete(ctx, t.ARMID, t.APIVersion)
}

// CancelSubscriptionPath is the action that cancels a subscription.
func CancelSubscriptionPath(subscriptionID string) string {
	return "/subscriptions/" + subscriptionID + "/providers/Microsoft.Subscription/cancel"
}

// deleteAlias cancels the subscription an Alias created, then deletes the
// alias, as ASO does. ASO reads the subscription ID from the status it
// keeps; gitaso GETs the alias (nothing to cancel when it is gone or has
// no subscription ID).
func deleteAlias(ctx context.Context, arm ARM, t Target) error {
	cur, err := getOrNil(ctx, arm, t.ARMID, t.APIVersion)
	if err != nil {
		return fmt.Errorf("read alias %s for its subscription ID: %w", t.ARMID, err)
	}
	if sub := stringAt(cur, "properties", "subscriptionId"); sub != "" {
		if _, err := arm.Post(ctx, CancelSubscriptionPath(sub), SubscriptionAPIVersion, nil); err != nil {
			return fmt.Errorf("failed to cancel subscription %q: %w", sub, err)
		}
		logger(ctx).InfoContext(ctx, "cancelled the alias's subscription", "alias", t.AzureName, "subscriptionId", sub)
	}
	return arm.Delete(ctx, t.ARMID, t.APIVersion)
}

// aliasSucceeded is Alias's success handler: the alias must report the
// subscription it created, and the alias's children live in that
// subscription.
func aliasSucceeded(_ Target, status []byte) (Success, error) {
	sub := stringAt(status, "properties", "subscriptionId")
	if sub == "" {
		return Success{}, &ConditionError{Reason: ReasonFailed, Message: "SubscriptionID field not populated"}
	}
	return Success{ChildResourceID: "/subscriptions/" + sub}, nil
}
