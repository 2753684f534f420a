package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// export computes the resource's operatorSpec exports (aso.Exports: ASO's
// table, its extra ARM calls and the CEL expressions), records them in the
// result and makes them visible to the resources applied after it.
func (w *walk) export(ctx context.Context, cli ARM, r *planner.Resource, rr *ResourceResult) {
	if len(r.ExportRules) == 0 {
		return
	}
	exports := make([]aso.Export, len(r.ExportRules))
	for i, ex := range r.ExportRules {
		exports[i] = aso.Export{Secret: ex.Secret, Source: ex.Source, Expr: ex.Expr, Name: ex.Name, Key: ex.Key}
	}
	vals, err := aso.Exports(ctx, cli, aso.Applied{
		Group: r.Group, Version: r.Version, Kind: r.Kind, ARMID: r.ARMID, AzureName: r.AzureName,
		Manifest: r.Object(), Response: rr.Response,
	}, exports)
	rr.Outputs = map[string]map[string]string{}
	rr.Secrets = map[string]map[string]string{}
	outs := make(planner.Outputs, len(vals))
	for _, v := range vals {
		dst := rr.Outputs
		if v.Secret {
			dst = rr.Secrets
		}
		if dst[v.Name] == nil {
			dst[v.Name] = map[string]string{}
		}
		dst[v.Name][v.Key] = v.Value
		outs[planner.OutputKey(r.Namespace, v.Secret, v.Name, v.Key)] = v.Value
	}
	w.mu.Lock()
	for k, v := range outs {
		w.outputs[k] = v
	}
	w.mu.Unlock()
	if err != nil {
		w.exportFailed(ctx, rr, exportSeverity(err), fmt.Errorf("exports not written: %w", err))
	}
}

// exportSeverity is ASO's severity of FailedWritingAdditionalKubernetesObjects:
// a Warning when a retry may succeed (an ARM call that failed for a
// retryable reason, such as a throttled listKeys), an Error otherwise (a
// broken expression, a value ARM does not have).
func exportSeverity(err error) string {
	var ae *azure.ARMError
	var xe *aso.ExportError
	if !errors.As(err, &xe) {
		return record.SeverityWarning // the ARM response could not be read
	}
	for _, p := range xe.Problems {
		if errors.As(p.Err, &ae) && ae.Retryable {
			return record.SeverityWarning
		}
	}
	return record.SeverityError
}

// exportFailed marks a resource whose exports could not all be written
// (ASO's FailedWritingAdditionalKubernetesObjects).
func (w *walk) exportFailed(ctx context.Context, rr *ResourceResult, severity string, err error) {
	rr.Outcome, rr.Err = Failed, err
	rr.Ready = failedCondition(&statusError{reason: "FailedWritingAdditionalKubernetesObjects", severity: severity, msg: err.Error(), err: err})
	w.e.opts.Logger.WarnContext(ctx, "exports failed", "resource", rr.Resource.ID(), "error", err)
}
