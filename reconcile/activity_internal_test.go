package reconcile

import "testing"

// ownKey folds case as ARM compares IDs, ASCII or not, and tells IDs apart.
func TestOwnKey(t *testing.T) {
	id := "/subscriptions/S/resourceGroups/RG-A/providers/Microsoft.Storage/storageAccounts/SA"
	if ownKey(id) != ownKey("/SUBSCRIPTIONS/s/resourcegroups/rg-a/PROVIDERS/microsoft.storage/STORAGEACCOUNTS/sa") {
		t.Error("IDs differing in case only have different keys")
	}
	if ownKey(id) == ownKey(id+"2") || ownKey(id) == ownKey(id[:len(id)-1]) {
		t.Error("different IDs share a key")
	}
	if ownKey("/subscriptions/s/resourceGroups/rg-Ä") != ownKey("/SUBSCRIPTIONS/s/resourcegroups/RG-ä") {
		t.Error("non-ASCII IDs differing in case only have different keys")
	}
}
