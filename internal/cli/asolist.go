package cli

import (
	"context"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/cluster"
)

// listASOObjects lists the cluster's ASO objects at the preferred version
// of each ASO group the API server serves. Temporary: replaced by the
// cluster package's listing (cluster/asoobjects.go) once it lands.
func listASOObjects(ctx context.Context, cl *cluster.Cluster, namespaces []string, selector string) ([]map[string]any, error) {
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		return nil, err
	}
	lists, err := cl.Clientset.Discovery().ServerPreferredNamespacedResources()
	if err != nil {
		return nil, fmt.Errorf("discover the cluster's ASO kinds: %w", err)
	}
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []map[string]any
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || !aso.IsASOGroup(gv.Group) {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			for _, ns := range namespaces {
				ul, err := dyn.Resource(gv.WithResource(r.Name)).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
				if err != nil {
					return nil, fmt.Errorf("list %s %s: %w", l.GroupVersion, r.Kind, err)
				}
				for _, u := range ul.Items {
					out = append(out, u.Object)
				}
			}
		}
	}
	return out, nil
}
