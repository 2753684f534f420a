package azure

import "testing"

func TestReadRequest(t *testing.T) {
	for _, c := range []struct {
		method, path string
		read         bool
	}{
		{"GET", "/subscriptions/s/resourceGroups/rg", true},
		{"HEAD", "/subscriptions/s/resourceGroups/rg", true},
		{"POST", "/providers/Microsoft.ResourceGraph/resources", true},
		{"POST", "/providers/microsoft.resourcegraph/resources/", true},
		{"PUT", "/subscriptions/s/resourceGroups/rg", false},
		{"PATCH", "/subscriptions/s/resourceGroups/rg", false},
		{"DELETE", "/subscriptions/s/resourceGroups/rg", false},
		{"POST", "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/a/listKeys", false},
	} {
		if got := readRequest(c.method, c.path); got != c.read {
			t.Errorf("%s %s: read %v, want %v", c.method, c.path, got, c.read)
		}
	}
}
