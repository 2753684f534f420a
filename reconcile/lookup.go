package reconcile

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// Lookup answers Helm's lookup function in charts (render.Options.Lookup)
// for ASO objects, as a chart would see them in a cluster where ASO runs: a
// shared library chart filling a private DNS record's address from the
// .status of a PrivateEndpoint.
//
//   - An ASO object gitaso manages (in its state, with an ARM ID) is answered
//     with apiVersion, kind, metadata (name, namespace) and the status ASO
//     writes from Azure's answer: the resource's top-level fields (id, name,
//     type, location, tags, sku, …) and its properties, flattened, as ASO's
//     generated status types name them (ARM's JSON names), and conditions
//     [{type: Ready, status, reason, message, severity}] from gitaso's Ready
//     condition. Azure is read when Get is set (the global credential), else
//     the last applied body (redacted secrets stay redacted) stands in.
//   - An ASO object gitaso does not manage yet is "known after apply"
//     (render.ErrKnownAfterApply): the release waits (DependencyNotReady)
//     and is rendered again in the run's next phase once it exists.
//     Decision: a lookup of an ASO object nobody declares waits too, naming
//     it, rather than rendering with an empty map that would put an empty
//     value into Azure.
//   - A list (name ""): every managed object of the kind in the namespace
//     (every namespace for ""), {"items": [...]}; never waits.
//   - Other kinds: an empty map, as helm template answers (a cluster, when
//     one is configured, holds no ASO status gitaso could add to).
type Lookup struct {
	DB *state.DB
	// Get reads a resource from Azure; nil uses the last applied body.
	Get func(ctx context.Context, armID, apiVersion string) ([]byte, error)
}

// Func is the render.Options.Lookup function.
func (l *Lookup) Func(ctx context.Context, apiVersion, kind, namespace, name string) (map[string]any, error) {
	group, _, _ := strings.Cut(apiVersion, "/")
	if l == nil || l.DB == nil || !aso.IsASOGroup(group) {
		return map[string]any{}, nil
	}
	if name == "" {
		rs, err := l.DB.Resources(record.Filter{Namespace: namespace, Kind: group + "/" + kind})
		if err != nil {
			return nil, err
		}
		sort.Slice(rs, func(i, j int) bool { return rs[i].Key() < rs[j].Key() })
		items := []any{}
		for _, r := range rs {
			if r.ARMID == "" {
				continue
			}
			items = append(items, l.object(ctx, apiVersion, r))
		}
		return map[string]any{"apiVersion": apiVersion, "kind": kind + "List", "items": items}, nil
	}
	r, ok, err := l.DB.Resource(record.ResourceKey(namespace, group, kind, name))
	if err != nil {
		return nil, err
	}
	if !ok || r.ARMID == "" || r.AppliedHash == "" {
		return nil, fmt.Errorf("%w: gitaso has not applied it yet", render.ErrKnownAfterApply)
	}
	return l.object(ctx, apiVersion, r), nil
}

// object is a managed resource as lookup returns it.
func (l *Lookup) object(ctx context.Context, apiVersion string, r record.Resource) map[string]any {
	body := []byte(r.AppliedBody)
	if l.Get != nil {
		if b, err := l.Get(ctx, r.ARMID, r.APIVersion); err == nil {
			body = b
		}
	}
	return map[string]any{
		"apiVersion": apiVersion,
		"kind":       r.Kind,
		"metadata":   map[string]any{"name": r.Name, "namespace": r.Namespace},
		"status":     asoStatus(body, r),
	}
}

// asoStatus is the status ASO writes from an ARM resource: its top-level
// fields and its properties flattened, and the Ready condition.
func asoStatus(body []byte, r record.Resource) map[string]any {
	st := map[string]any{}
	var arm map[string]any
	if json.Unmarshal(body, &arm) == nil {
		for k, v := range arm {
			if k != "properties" {
				st[k] = v
			}
		}
		if props, ok := arm["properties"].(map[string]any); ok {
			for k, v := range props {
				st[k] = v
			}
		}
	}
	if _, ok := st["id"]; !ok {
		st["id"] = r.ARMID
	}
	cond := map[string]any{"type": "Ready", "status": r.ReadyStatus(), "reason": r.Ready.Reason, "message": r.Ready.Message}
	if r.Ready.Severity != "" {
		cond["severity"] = r.Ready.Severity
	}
	st["conditions"] = []any{cond}
	return st
}

// lookupMayProgress reports whether a phase applied something while a
// release waits on a lookup of an object not applied yet: the next phase
// renders it again (the object may exist now).
func lookupMayProgress(rep *Report) bool {
	if rep == nil || rep.units == nil || rep.Plan == nil || rep.Plan.Held != nil || rep.Result == nil ||
		(rep.Run.Outcome != record.OutcomeSucceeded && rep.Run.Outcome != record.OutcomePartial) {
		return false
	}
	waits := false
	for id, h := range rep.units.held {
		if u, ok := rep.units.units[id]; ok && h.retry && u.Reason == manifest.ReasonDependencyNotReady {
			waits = true
		}
	}
	if !waits {
		return false
	}
	for _, pr := range rep.Plan.Resources {
		if pr.Action.Writes() {
			return true
		}
	}
	return false
}
