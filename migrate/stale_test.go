package migrate

import (
	"slices"
	"testing"
)

func TestStaleFields(t *testing.T) {
	have := map[string]any{ // as the API server returns it: int64, defaults filled in
		"azureName": "orders", "maxDeliveryCount": int64(10), "owner": map[string]any{"name": "sb"},
		"tags": map[string]any{"team": "a"}, "locks": []any{"x"},
	}
	for _, tc := range []struct {
		name string
		want map[string]any
		out  []string
	}{
		{"the same, defaults aside", map[string]any{"maxDeliveryCount": 10, "owner": map[string]any{"name": "sb"}}, nil},
		{"a changed number", map[string]any{"maxDeliveryCount": 7}, []string{"spec.maxDeliveryCount"}},
		{"a new nested field", map[string]any{"tags": map[string]any{"team": "a", "env": "dev"}}, []string{"spec.tags.env"}},
		{"a changed list", map[string]any{"locks": []any{"x", "y"}}, []string{"spec.locks"}},
		{"an object where a value was", map[string]any{"azureName": map[string]any{"x": 1}}, []string{"spec.azureName"}},
	} {
		if got := StaleFields(tc.want, have); !slices.Equal(got, tc.out) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.out)
		}
	}
	e := &StaleError{Objects: map[string][]string{"NamespacesQueue team-a/orders": {"spec.maxDeliveryCount"}}}
	if got := e.Error(); got != "1 ASO objects in the cluster are older than gitaso's manifests, and ASO would send their older values to Azure once given back: NamespacesQueue team-a/orders (spec.maxDeliveryCount)" {
		t.Errorf("message: %s", got)
	}
}
