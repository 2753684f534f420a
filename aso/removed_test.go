package aso

import "testing"

func TestLookupRemoved(t *testing.T) {
	r, ok := LookupRemoved("containerservice.azure.com", "v1api20240402preview", "ManagedCluster")
	if !ok {
		t.Fatal("v1api20240402preview ManagedCluster not found among removed versions")
	}
	if r.LastIn != "v2.18.0" || len(r.Replacements) == 0 {
		t.Errorf("got %+v", r)
	}
	want := "containerservice.azure.com/v1api20240402preview ManagedCluster was removed after ASO v2.18.0 (last in v2.18.0); use containerservice.azure.com/v20251002preview or containerservice.azure.com/v1api20250801 or containerservice.azure.com/v1api20240901"
	if got := r.Message(); got != want {
		t.Errorf("Message:\n got %s\nwant %s", got, want)
	}
	r, ok = LookupRemoved("containerservice.azure.com", "v1beta20210501", "ManagedCluster")
	if !ok || r.LastIn != "v2.3.0" || r.RemovedIn != "v2.4.0" {
		t.Errorf("v1beta20210501: %+v %v", r, ok)
	}
}

// Every removed version is absent from the shipped kinds (Lookup finds it
// only as a removed kind) and every replacement is a shipped kind.
func TestRemovedConsistentWithCatalog(t *testing.T) {
	rs := RemovedVersions()
	if len(rs) == 0 {
		t.Fatal("no removed versions")
	}
	for _, r := range rs {
		if k, ok := Lookup(r.Group, r.Version, r.Kind); ok && k.Removed == nil {
			t.Errorf("%s/%s %s is both in the catalog and removed", r.Group, r.Version, r.Kind)
		}
		for _, v := range r.Replacements {
			if k, ok := Lookup(r.Group, v, r.Kind); !ok || k.Removed != nil {
				t.Errorf("%s/%s %s: replacement %s not in the catalog", r.Group, r.Version, r.Kind, v)
			}
		}
	}
}
