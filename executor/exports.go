package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gitaso/gitaso/planner"
)

// export computes the resource's operatorSpec exports from ARM's view of it
// and makes them visible to the resources applied after it.
func (w *walk) export(ctx context.Context, cli ARM, r *planner.Resource, rr *ResourceResult) {
	n := r.Node()
	if n == nil || len(n.Exports) == 0 {
		return
	}
	var doc map[string]any
	if err := json.Unmarshal(rr.Response, &doc); err != nil {
		rr.Outcome, rr.Err = Failed, fmt.Errorf("read ARM response for exports: %w", err)
		rr.Ready = failedCondition(rr.Err)
		return
	}
	vals := map[string]string{}
	var missing []string
	for _, ex := range n.Exports {
		if ex.Expr {
			missing = append(missing, fmt.Sprintf("%s/%s (expressions are not evaluated yet)", ex.Name, ex.Key))
			continue
		}
		v, ok := exportValue(doc, r, ex.Source)
		if !ok {
			missing = append(missing, fmt.Sprintf("%s (for %s/%s)", ex.Source, ex.Name, ex.Key))
			continue
		}
		vals[planner.OutputKey(r.Namespace, ex.Secret, ex.Name, ex.Key)] = v
	}
	if len(missing) > 0 {
		rr.Outcome = Failed
		rr.Err = fmt.Errorf("exports not available: %s", strings.Join(missing, ", "))
		rr.Ready = failedCondition(&statusError{reason: "FailedWritingAdditionalKubernetesObjects", severity: "Error", msg: rr.Err.Error()})
	}
	rr.Outputs = map[string]map[string]string{}
	rr.Secrets = map[string]map[string]string{}
	for _, ex := range n.Exports {
		k := planner.OutputKey(r.Namespace, ex.Secret, ex.Name, ex.Key)
		v, ok := vals[k]
		if !ok {
			continue
		}
		dst := rr.Outputs
		if ex.Secret {
			dst = rr.Secrets
		}
		if dst[ex.Name] == nil {
			dst[ex.Name] = map[string]string{}
		}
		dst[ex.Name][ex.Key] = v
	}
	w.mu.Lock()
	for k, v := range vals {
		w.outputs[k] = v
	}
	w.mu.Unlock()
}

// exportValue finds a generated export (ASO's $generatedConfigs and the
// identity's azure-generated secrets) in the resource as ARM returns it.
func exportValue(doc map[string]any, r *planner.Resource, name string) (string, bool) {
	if name == "subscriptionId" {
		return subscriptionOf(r.ARMID), true
	}
	props, _ := doc["properties"].(map[string]any)
	if s, ok := stringAt(props, name); ok {
		return s, true
	}
	if s, ok := stringAt(doc, name); ok {
		return s, true
	}
	// Endpoints: blobEndpoint → properties.primaryEndpoints.blob, and the
	// secondary ones.
	for _, pre := range []string{"", "secondary"} {
		base := strings.TrimPrefix(name, pre)
		if pre != "" && base == name {
			continue
		}
		if ep, ok := strings.CutSuffix(base, "Endpoint"); ok && ep != "" {
			ep = strings.ToLower(ep[:1]) + ep[1:]
			group := "primaryEndpoints"
			if pre != "" {
				group = "secondaryEndpoints"
			}
			if m, ok := props[group].(map[string]any); ok {
				if s, ok := stringAt(m, ep); ok {
					return s, true
				}
			}
		}
	}
	return "", false
}

func stringAt(m map[string]any, k string) (string, bool) {
	if m == nil {
		return "", false
	}
	switch v := m[k].(type) {
	case string:
		return v, true
	case float64, bool:
		return fmt.Sprint(v), true
	}
	return "", false
}
