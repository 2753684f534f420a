package reconcile

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"testing"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/google/go-cmp/cmp"
)

// The compressed plan decompresses to what json.Marshal renders, with and
// without resources, held or not, and with strings that hold the marker.
func TestEncodePlanIsJSONMarshalCompressed(t *testing.T) {
	res := func(name string) *planner.Resource {
		return &planner.Resource{Namespace: "team-a", Group: "resources.azure.com", Kind: "ResourceGroup", Name: name,
			ARMID: "/subscriptions/s/resourceGroups/" + name, Action: planner.Create, Manifest: map[string]any{"spec": map[string]any{"tags": map[string]any{"x": `"resources":null`}}}}
	}
	for name, p := range map[string]*planner.Plan{
		"empty":    {Revision: "abc"},
		"no items": {Revision: "abc", Resources: []*planner.Resource{}},
		"two":      {Revision: `"resources":null`, Resources: []*planner.Resource{res("rg-a"), res("rg-b")}},
		"held":     {Revision: "abc", Resources: []*planner.Resource{res("rg-a")}, Held: &record.Hold{Message: `"resources":null`}},
		"deferred": {Revision: "abc", Resources: []*planner.Resource{res("rg-a")}, Deferred: []*planner.Deferred{{}}},
	} {
		t.Run(name, func(t *testing.T) {
			want, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			gz, err := encodePlan(p)
			if err != nil {
				t.Fatal(err)
			}
			zr, err := gzip.NewReader(bytes.NewReader(gz))
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("encodePlan differs from json.Marshal (-want +got):\n%s", diff)
			}
		})
	}
}
