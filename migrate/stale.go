package migrate

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// StaleFields lists the fields of want (a manifest's spec, as gitaso
// applies it) that the object in the cluster (have, its spec) does not hold
// with the same value, as JSON paths such as "spec.maxDeliveryCount". Fields
// only have holds (defaults ASO's webhooks filled in, or fields the manifest
// no longer sets) are not compared: a default is no difference. An ASO
// object given back with such a spec makes ASO send its older values to
// Azure, undoing what gitaso applied.
func StaleFields(want, have map[string]any) []string {
	var out []string
	stale(normalize(want), normalize(have), "spec", &out)
	sort.Strings(out)
	return out
}

func stale(want, have any, path string, out *[]string) {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			*out = append(*out, path)
			return
		}
		for k, v := range w {
			stale(v, h[k], path+"."+k, out)
		}
	default:
		if !reflect.DeepEqual(want, have) {
			*out = append(*out, path)
		}
	}
}

// normalize gives v JSON's shapes (numbers float64, lists []any), so that a
// value read from YAML and one read from the API server compare equal.
func normalize(v map[string]any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}

// StaleError names the ASO objects whose spec in the cluster is older than
// gitaso's manifests.
type StaleError struct {
	Objects map[string][]string // "Kind namespace/name" → stale fields
}

func (e *StaleError) Error() string {
	keys := make([]string, 0, len(e.Objects))
	for k := range e.Objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s (%s)", k, strings.Join(e.Objects[k], ", "))
	}
	return fmt.Sprintf("%d ASO objects in the cluster are older than gitaso's manifests, and ASO would send their older values to Azure once given back: %s",
		len(keys), strings.Join(parts, "; "))
}
