package cli

import (
	"context"
	"errors"

	"github.com/gitaso/gitaso/cluster"
)

// listASOObjects adapts the cluster's listing of ASO objects (cluster/asoobjects.go).
func listASOObjects(ctx context.Context, cl *cluster.Cluster, namespaces []string, selector string) ([]map[string]any, error) {
	return nil, errors.New("listing ASO objects: not wired yet")
}
