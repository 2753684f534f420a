package cli

import (
	"context"
	"strings"

	"github.com/gitaso/gitaso/cluster"
)

// asoObjects lists the cluster's ASO objects of the namespaces (every one
// when none) matching selector, as the API server returns them
// (cluster.ListASOObjects: one version per kind; migrate.Clean writes each
// at the version its author applied).
func asoObjects(ctx context.Context, cl *cluster.Cluster, namespaces []string, selector string) ([]map[string]any, error) {
	objs, err := cl.ListASOObjects(ctx, cluster.ASOListOptions{Namespaces: namespaces, LabelSelector: strings.TrimSpace(selector)})
	if err != nil {
		return nil, err
	}
	out := make([]map[string]any, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.Object.Object)
	}
	return out, nil
}
