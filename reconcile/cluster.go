package reconcile

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// ExportSink writes the exports of gitaso's resources outside gitaso: into
// the Kubernetes cluster gitaso runs beside (cluster.Exporter). Nil in
// Config: exports stay in the state file only.
type ExportSink interface {
	// Sync makes the sink hold exactly want; errors are per owner key.
	Sync(ctx context.Context, want []cluster.Export) (*cluster.SyncResult, error)
	// Forget drops what the sink remembers having written, so that the
	// next Sync writes everything again (a refresh corrects drift).
	Forget()
}

// Reasons of a Ready condition set because an export could not be written.
const (
	ReasonExportConflict = "ExportConflict"
	ReasonExportFailed   = "ExportFailed"
)

// syncExports hands every export recorded in state to the sink and records
// its per-resource failures in the resources' Ready conditions (and clears
// the ones that are resolved).
func (r *Reconciler) syncExports(ctx context.Context, refresh bool) error {
	if r.cfg.Exports == nil || r.db == nil {
		return nil
	}
	if refresh {
		r.cfg.Exports.Forget()
	}
	rs, err := r.db.Resources(record.Filter{})
	if err != nil {
		return err
	}
	want, err := exportsOf(r.db, rs)
	if err != nil {
		return err
	}
	start := time.Now()
	res, err := r.cfg.Exports.Sync(ctx, want)
	if err != nil {
		r.log.ErrorContext(ctx, "exports not written to the cluster", "error", err)
		return err
	}
	if ctx.Err() != nil {
		// Stopped mid-sync (a shutdown, a lost leadership): what was not
		// written is not the resources' fault; the next run writes it.
		return ctx.Err()
	}
	if res.Applied > 0 || res.Deleted > 0 || len(res.Errors) > 0 {
		r.log.InfoContext(ctx, "exports written to the cluster", "applied", res.Applied, "deleted", res.Deleted,
			"unchanged", res.Unchanged, "failed", len(res.Errors), "took", time.Since(start).Round(time.Millisecond))
	}
	now := time.Now().UTC()
	return r.db.Update(func(w *state.Writer) error {
		for _, res0 := range rs {
			key := res0.Key()
			cur, ok, err := w.Resource(key)
			if err != nil || !ok {
				continue
			}
			ferr := res.Errors[key]
			exportReason := cur.Ready.Reason == ReasonExportConflict || cur.Ready.Reason == ReasonExportFailed
			switch {
			case ferr != nil:
				reason := ReasonExportFailed
				var ce *cluster.ConflictError
				if errors.As(ferr, &ce) {
					reason = ReasonExportConflict
				}
				cond := record.Condition{Type: record.ConditionReady, Status: record.StatusFalse, Severity: "Error",
					Reason: reason, Message: ferr.Error(), ObservedGeneration: cur.Generation}
				if cur.Ready.IsEquivalent(cond) {
					continue
				}
				cond.LastTransitionTime = now
				if cur.Ready.Status == cond.Status && !cur.Ready.LastTransitionTime.IsZero() {
					cond.LastTransitionTime = cur.Ready.LastTransitionTime
				}
				cur.Ready, cur.UpdatedAt = cond, now
				if err := w.PutResource(cur); err != nil {
					return err
				}
				r.log.WarnContext(ctx, "export not written", "resource", key, "reason", reason, "error", ferr)
			case exportReason:
				// Resolved: the resource is Ready again.
				cur.Ready = record.Condition{Type: record.ConditionReady, Status: record.StatusTrue, Reason: "Succeeded",
					ObservedGeneration: cur.Generation, LastTransitionTime: now}
				cur.UpdatedAt = now
				if err := w.PutResource(cur); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// exportsOf lists the ConfigMaps and Secrets the resources exported (values
// from state; Secret values decrypted only to be handed to the sink).
func exportsOf(db *state.DB, rs []record.Resource) ([]cluster.Export, error) {
	var out []cluster.Export
	for _, res := range rs {
		if len(res.Outputs) == 0 && len(res.SecretOutputs) == 0 {
			continue
		}
		cms := map[string]map[string]string{}
		for k, v := range res.Outputs {
			name, key, ok := strings.Cut(k, "/")
			if !ok {
				continue
			}
			if cms[name] == nil {
				cms[name] = map[string]string{}
			}
			cms[name][key] = v
		}
		for _, name := range sortedKeys(cms) {
			out = append(out, cluster.Export{Owner: res.Key(), ARMID: res.ARMID, Namespace: res.Namespace, Name: name, Data: cms[name]})
		}
		keys := map[string][]string{}
		for _, k := range res.SecretOutputs {
			name, key, ok := strings.Cut(k, "/")
			if ok {
				keys[name] = append(keys[name], key)
			}
		}
		for _, name := range sortedKeys(keys) {
			vals, found, err := db.SecretExports(res.Namespace, name)
			if err != nil {
				return nil, err
			}
			if !found {
				continue
			}
			data := map[string]string{}
			for _, k := range keys[name] {
				if v, ok := vals[k]; ok {
					data[k] = v
				}
			}
			out = append(out, cluster.Export{Owner: res.Key(), ARMID: res.ARMID, Namespace: res.Namespace, Name: name, Secret: true, Data: data})
		}
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
