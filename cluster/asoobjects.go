package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/gitaso/gitaso/aso"
)

// ASOListOptions choose the ASO objects ListASOObjects reads.
type ASOListOptions struct {
	// Namespaces to read; empty reads every namespace.
	Namespaces []string
	// LabelSelector in Kubernetes' syntax ("team=a,tier!=test"); empty
	// selects every object.
	LabelSelector string
	// PageSize bounds one list request (500 when zero).
	PageSize int64
}

// ASOObject is one ASO object read from a cluster: the object as the API
// server returned it and a typed view of what gitaso needs from it.
type ASOObject struct {
	// Group, Version and Kind of the object as it was read (the version
	// discovery chose, see ListASOObjects).
	Group, Version, Kind string
	Namespace, Name      string
	// Catalog is the catalog's kind for the object: its version when the
	// catalog has it, otherwise the newest catalogued version of the same
	// group and kind (ASO's storage versions are not catalogued).
	Catalog *aso.Kind
	// ARMID is status.id, set by ASO once it has created or adopted the
	// resource; "" before.
	ARMID string
	// Policy is the reconcile-policy annotation, manage when absent or
	// invalid (as ASO does); PolicyError says why an invalid one was read
	// as manage.
	Policy      aso.ReconcilePolicy
	PolicySet   bool // the object carries the annotation
	PolicyError string
	// Ready is the object's Ready condition (Status "" when ASO has not set
	// one).
	Ready Condition
	// Owner is spec.owner, nil when the object has none.
	Owner *Owner
	// Object is the object as read.
	Object *unstructured.Unstructured
}

// Condition is an ASO status condition.
type Condition struct {
	Status             string // "True", "False", "Unknown", or "" when absent
	Severity           string // ASO's "Error", "Warning", "Info" or ""
	Reason, Message    string
	ObservedGeneration int64
	LastTransitionTime string
}

// Owner is an ASO object's spec.owner: a name in the object's namespace
// (with group and kind for arbitrary owners) or an ARM ID.
type Owner struct {
	Group, Kind, Name string
	ARMID             string
}

// Ref returns "namespace/Kind/name", the object as gitaso names a resource
// in messages.
func (o ASOObject) Ref() string { return o.Namespace + "/" + o.Kind + "/" + o.Name }

// GVK returns the object's "group/version, Kind=kind".
func (o ASOObject) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: o.Group, Version: o.Version, Kind: o.Kind}
}

// Generation is the object's metadata.generation.
func (o ASOObject) Generation() int64 {
	if o.Object == nil {
		return 0
	}
	return o.Object.GetGeneration()
}

// ASOResource is an ASO kind the cluster serves: the group-version-resource
// ListASOObjects reads it through.
type ASOResource struct {
	schema.GroupVersionResource
	Kind string
}

// ASOResources returns, from discovery, every ASO kind the cluster serves
// and the catalog knows, once per group and kind, with the version it is
// read through: the group's preferred version when it serves the kind and
// the catalog knows that version, otherwise the newest served version the
// catalog knows, otherwise the first served version. Groups whose discovery
// failed are an error only when they are ASO groups.
func (c *Cluster) ASOResources(ctx context.Context) ([]ASOResource, error) {
	groups, lists, err := c.Clientset.Discovery().ServerGroupsAndResources()
	if err != nil {
		var gd *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gd) {
			return nil, fmt.Errorf("discover the cluster's API resources: %w", err)
		}
		for gv, gerr := range gd.Groups {
			if aso.IsASOGroup(gv.Group) {
				return nil, fmt.Errorf("discover the cluster's API resources of %s: %w", gv, gerr)
			}
		}
	}
	preferred := map[string]string{}
	for _, g := range groups {
		preferred[g.Name] = g.PreferredVersion.Version
	}
	type gk struct{ group, kind string }
	served := map[gk][]ASOResource{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || !aso.IsASOGroup(gv.Group) {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !r.Namespaced || !hasVerb(r.Verbs, "list") {
				continue // subresources, cluster-scoped or unlistable kinds are no ASO objects
			}
			if catalogKind(gv.Group, gv.Version, r.Kind) == nil {
				continue
			}
			k := gk{gv.Group, r.Kind}
			served[k] = append(served[k], ASOResource{GroupVersionResource: gv.WithResource(r.Name), Kind: r.Kind})
		}
	}
	out := make([]ASOResource, 0, len(served))
	for k, rs := range served {
		out = append(out, pickVersion(rs, preferred[k.group]))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Kind < out[j].Kind
	})
	return out, nil
}

func pickVersion(rs []ASOResource, preferred string) ASOResource {
	var best *ASOResource
	for i := range rs {
		r := &rs[i]
		if _, ok := aso.Lookup(r.Group, r.Version, r.Kind); !ok {
			continue
		}
		if r.Version == preferred {
			return *r
		}
		if best == nil || r.Version > best.Version {
			best = r
		}
	}
	if best != nil {
		return *best
	}
	return rs[0]
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// catalogKind returns the catalog's kind for group/version/kind, or the
// newest catalogued version of group and kind, or nil when the catalog has
// no such kind.
func catalogKind(group, version, kind string) *aso.Kind {
	if k, ok := aso.Lookup(group, version, kind); ok {
		return k
	}
	var last *aso.Kind
	for _, k := range aso.Kinds() { // sorted by group, kind and version
		if k.Group == group && k.Kind == kind {
			last = k
		}
	}
	return last
}

// ListASOObjects reads the ASO objects of the cluster: every kind
// ASOResources finds, in the namespaces and with the labels o selects,
// sorted by namespace, group, kind and name. It only reads (discovery and
// list): gitaso needs get and list on the ASO groups' resources.
func (c *Cluster) ListASOObjects(ctx context.Context, o ASOListOptions) ([]ASOObject, error) {
	res, err := c.ASOResources(ctx)
	if err != nil {
		return nil, err
	}
	dc, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		return nil, fmt.Errorf("kubernetes dynamic client: %w", err)
	}
	namespaces := o.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	var out []ASOObject
	for _, r := range res {
		for _, ns := range namespaces {
			objs, err := listAll(ctx, dc.Resource(r.GroupVersionResource).Namespace(ns), o)
			if err != nil {
				where := "every namespace"
				if ns != "" {
					where = "namespace " + ns
				}
				return nil, fmt.Errorf("list %s.%s in %s: %w", r.Resource, r.Group, where, err)
			}
			for i := range objs {
				out = append(out, NewASOObject(&objs[i]))
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	return out, nil
}

func listAll(ctx context.Context, ri dynamic.ResourceInterface, o ASOListOptions) ([]unstructured.Unstructured, error) {
	limit := o.PageSize
	if limit <= 0 {
		limit = 500
	}
	var items []unstructured.Unstructured
	opts := metav1.ListOptions{LabelSelector: o.LabelSelector, Limit: limit}
	for {
		l, err := ri.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		items = append(items, l.Items...)
		if opts.Continue = l.GetContinue(); opts.Continue == "" {
			return items, nil
		}
	}
}

// NewASOObject builds the typed view of an ASO object.
func NewASOObject(u *unstructured.Unstructured) ASOObject {
	gvk := u.GroupVersionKind()
	o := ASOObject{
		Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind,
		Namespace: u.GetNamespace(), Name: u.GetName(),
		Catalog: catalogKind(gvk.Group, gvk.Version, gvk.Kind),
		Policy:  aso.ReconcilePolicyManage,
		Object:  u,
	}
	o.ARMID, _, _ = unstructured.NestedString(u.Object, "status", "id")
	if p, ok := u.GetAnnotations()[aso.AnnotationReconcilePolicy]; ok && p != "" {
		o.PolicySet = true
		if pol, err := aso.ParseReconcilePolicy(p); err != nil {
			o.PolicyError = err.Error()
		} else {
			o.Policy = pol
		}
	}
	o.Ready = condition(u, "Ready")
	if own, ok, _ := unstructured.NestedMap(u.Object, "spec", "owner"); ok {
		str := func(k string) string { s, _ := own[k].(string); return s }
		o.Owner = &Owner{Group: str("group"), Kind: str("kind"), Name: str("name"), ARMID: str("armId")}
	}
	return o
}

// condition returns the status condition of the given type.
func condition(u *unstructured.Unstructured, typ string) Condition {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != typ {
			continue
		}
		str := func(k string) string { s, _ := m[k].(string); return s }
		cond := Condition{Status: str("status"), Severity: str("severity"), Reason: str("reason"),
			Message: str("message"), LastTransitionTime: str("lastTransitionTime")}
		switch g := m["observedGeneration"].(type) {
		case int64:
			cond.ObservedGeneration = g
		case float64:
			cond.ObservedGeneration = int64(g)
		}
		return cond
	}
	return Condition{}
}
