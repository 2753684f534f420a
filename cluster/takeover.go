package cluster

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
)

// TakeOverExports marks, at a hand-over from ASO, the ConfigMaps and
// Secrets ASO wrote for the resources' operatorSpec exports as gitaso's
// (exps: Owner, ARMID, Namespace, Name, Secret; Data unused): gitaso's
// labels and owner annotations are applied with server-side apply under its
// field manager, never forced, on the object as read, so that its exporter
// (Exporter.Sync) updates them from then on instead of reporting a
// conflict. Their data and ASO's owner references stay as ASO left them: a
// value gitaso computes differently is then a conflict with ASO's field
// manager, reported by the exporter, never overwritten. An object that does
// not exist is left for the exporter to create; one another gitaso
// resource exports is refused (a *ConflictError). It returns the objects it
// marked ("ConfigMap team-a/settings").
func TakeOverExports(ctx context.Context, cl *Cluster, instance string, exps []Export) ([]string, error) {
	dyn, err := dynamic.NewForConfig(cl.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if instance == "" {
		instance = "gitaso"
	}
	var taken []string
	for _, e := range exps {
		gvk := gvkOf(e.Secret)
		ri := dyn.Resource(gvk.GroupVersion().WithResource(map[bool]string{true: "secrets", false: "configmaps"}[e.Secret])).Namespace(e.Namespace)
		cur, err := ri.Get(ctx, e.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return taken, fmt.Errorf("read %s: %w", e.ID(), explain(err))
		}
		if o := cur.GetAnnotations()[AnnotationOwner]; o != "" && o != e.Owner {
			return taken, &ConflictError{Object: e.ID(), Reason: "exported by " + o}
		}
		if l := cur.GetLabels(); l[LabelManagedBy] == "gitaso" && l[LabelInstance] == instance {
			continue // already gitaso's
		}
		ann := map[string]any{AnnotationOwner: e.Owner}
		if e.ARMID != "" {
			ann[AnnotationARMID] = e.ARMID
		}
		cfg := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind,
			"metadata": map[string]any{"name": e.Name, "namespace": e.Namespace, "resourceVersion": cur.GetResourceVersion(),
				"labels":      map[string]any{LabelManagedBy: "gitaso", LabelInstance: instance, LabelOwner: ownerHash(e.Owner)},
				"annotations": ann},
		}}
		u, err := ri.Apply(ctx, e.Name, cfg, metav1.ApplyOptions{FieldManager: FieldManager})
		if err == nil && u.GetUID() != cur.GetUID() {
			uid := u.GetUID() // deleted since the read: the apply created it
			_ = ri.Delete(ctx, e.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			continue
		}
		if err != nil {
			return taken, fmt.Errorf("take over %s: %w", e.ID(), explain(err))
		}
		taken = append(taken, e.ID())
	}
	return taken, nil
}
