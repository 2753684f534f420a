package migrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
)

// lastApplied is the annotation kubectl's client-side apply keeps: the
// object exactly as the user last applied it.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// fluxLabels are what Flux's kustomize-controller writes on every object it
// applies, for itself (which Kustomization owns the object); they come back
// when Flux applies the imported repository, so they are not copied.
var fluxLabels = []string{"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"}

// Source says where the fields of a cleaned object came from, from the
// most to the least exact.
type Source string

const (
	// FromLastApplied: kubectl's last-applied-configuration annotation,
	// the object as its author last applied it.
	FromLastApplied Source = "last-applied"
	// FromManagedFields: the fields that a field manager other than ASO's
	// controller set (server-side apply by Flux or kubectl, kubectl create,
	// an edit).
	FromManagedFields Source = "managed-fields"
	// FromObject: neither was there; the whole spec is kept, less the
	// defaults ASO's webhook is known to write (spec.azureName).
	FromObject Source = "object"
	// FromGitaso: rendered from gitaso's repository (an export).
	FromGitaso Source = "gitaso"
)

// Options tune Clean.
type Options struct {
	// OperatorManagers are field managers whose fields are ASO's
	// controller's, besides the one that wrote the status subresource
	// (always ASO's: status is the controller's alone).
	OperatorManagers []string
}

// Object is one ASO object cleaned into the manifest a user writes.
type Object struct {
	Group, Version, Kind, Namespace, Name string
	// Manifest is apiVersion, kind, metadata (name, namespace, the user's
	// labels and annotations) and spec.
	Manifest map[string]any
	// Source is where the user's fields were read from.
	Source Source
	// Dropped lists what Clean removed beyond status and the server's
	// metadata: defaults and fields ASO's controller wrote (field paths),
	// ownerReferences turned into spec.owner.
	Dropped []string
	// Uses are the Secrets and ConfigMaps the object reads, by name: their
	// values are never copied.
	Uses []Use
}

// Use is one Secret or ConfigMap an object reads.
type Use struct {
	Kind      string // "Secret" or "ConfigMap"
	Namespace string
	Name      string
	// Field is what reads it: a spec path, or the annotation
	// credential-from, or "namespace credential".
	Field string
}

func (u Use) String() string { return u.Kind + " " + u.Namespace + "/" + u.Name + " (" + u.Field + ")" }

// ErrNotASO is returned by Clean for an object whose kind is not an ASO
// kind in gitaso's catalog.
var ErrNotASO = errors.New("not an ASO kind gitaso knows")

// Clean turns an ASO object as the API server returns it (status, managed
// fields, ASO's annotations and finalizer, owner references, defaults) into
// the manifest its author wrote. It does not change obj.
func Clean(obj map[string]any, o Options) (*Object, error) {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	id := fmt.Sprintf("%s %s/%s", kind, ns, name)
	if name == "" || ns == "" {
		return nil, fmt.Errorf("%s: metadata.name and metadata.namespace are required", id)
	}
	// The version the author wrote, which the API server may serve the
	// object under another one of (the version a listing chose).
	k, ok := aso.LookupAPIVersion(authorAPIVersion(obj, o), kind)
	if !ok {
		if k, ok = aso.LookupAPIVersion(apiVersion, kind); !ok {
			return nil, fmt.Errorf("%s (%s): %w", id, apiVersion, ErrNotASO)
		}
	}
	c := &Object{Group: k.Group, Version: k.Version, Kind: k.Kind, Namespace: ns, Name: name}
	spec, labels, annotations := c.userFields(obj, apiVersion, o)
	if spec == nil {
		spec = map[string]any{}
	}
	c.ownerFromReferences(k, meta, spec)
	if c.Source != FromLastApplied {
		c.dropDefaultAzureName(k, spec)
	}
	for _, l := range fluxLabels {
		delete(labels, l)
	}
	delete(annotations, lastApplied)
	for a := range annotations {
		if aso.IsOperatorAnnotation(a) {
			delete(annotations, a)
		}
	}
	md := map[string]any{"name": name, "namespace": ns}
	if len(labels) > 0 {
		md["labels"] = labels
	}
	if len(annotations) > 0 {
		md["annotations"] = annotations
	}
	c.Manifest = map[string]any{"apiVersion": k.APIGroupVersion(), "kind": k.Kind, "metadata": md, "spec": spec}
	if err := c.uses(k, spec, annotations); err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	sort.Strings(c.Dropped)
	return c, nil
}

// userFields returns the spec, labels and annotations the object's author
// wrote, from the last-applied annotation, else the managed fields of
// managers other than ASO's controller, else the object itself.
func (c *Object) userFields(obj map[string]any, apiVersion string, o Options) (spec, labels, annotations map[string]any) {
	meta, _ := obj["metadata"].(map[string]any)
	objSpec, _ := deepCopy(obj["spec"]).(map[string]any)
	objLabels, _ := deepCopy(meta["labels"]).(map[string]any)
	objAnn, _ := deepCopy(meta["annotations"]).(map[string]any)
	if la, _ := objAnn[lastApplied].(string); la != "" {
		var applied map[string]any
		if json.Unmarshal([]byte(la), &applied) == nil && sameGroup(applied["apiVersion"], apiVersion) && applied["kind"] == obj["kind"] {
			c.Source = FromLastApplied
			am, _ := applied["metadata"].(map[string]any)
			spec, _ = applied["spec"].(map[string]any)
			labels, _ = am["labels"].(map[string]any)
			annotations, _ = am["annotations"].(map[string]any)
			if labels == nil {
				labels = map[string]any{}
			}
			if annotations == nil {
				annotations = map[string]any{}
			}
			c.droppedBesides("spec", objSpec, spec)
			return spec, labels, annotations
		}
	}
	user, ok := userFieldSet(meta, o)
	if !ok {
		c.Source = FromObject
		if objLabels == nil {
			objLabels = map[string]any{}
		}
		if objAnn == nil {
			objAnn = map[string]any{}
		}
		return objSpec, objLabels, objAnn
	}
	c.Source = FromManagedFields
	fs, _ := user["f:spec"].(map[string]any)
	spec, _ = filterFields(objSpec, fs).(map[string]any)
	c.droppedBesides("spec", objSpec, spec)
	fm, _ := user["f:metadata"].(map[string]any)
	fl, _ := fm["f:labels"].(map[string]any)
	fa, _ := fm["f:annotations"].(map[string]any)
	labels, _ = filterFields(objLabels, fl).(map[string]any)
	annotations, _ = filterFields(objAnn, fa).(map[string]any)
	if labels == nil {
		labels = map[string]any{}
	}
	if annotations == nil {
		annotations = map[string]any{}
	}
	return spec, labels, annotations
}

// authorAPIVersion is the apiVersion the object's author applied: the
// last-applied annotation's, else that of the managed fields of the
// managers other than ASO's controller, else the object's own.
func authorAPIVersion(obj map[string]any, o Options) string {
	apiVersion, _ := obj["apiVersion"].(string)
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	if la, _ := ann[lastApplied].(string); la != "" {
		var applied struct{ APIVersion, Kind string }
		if json.Unmarshal([]byte(la), &applied) == nil && sameGroup(applied.APIVersion, apiVersion) && applied.Kind == obj["kind"] {
			return applied.APIVersion
		}
	}
	operator := operatorManagers(meta, o)
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		em, _ := e.(map[string]any)
		m, _ := em["manager"].(string)
		sub, _ := em["subresource"].(string)
		av, _ := em["apiVersion"].(string)
		if !operator[m] && sub == "" && sameGroup(av, apiVersion) {
			return av
		}
	}
	return apiVersion
}

func sameGroup(a any, b string) bool {
	as, _ := a.(string)
	ga, _, _ := strings.Cut(as, "/")
	gb, _, _ := strings.Cut(b, "/")
	return as != "" && ga == gb
}

// operatorManagers are the field managers of ASO's controller: the one
// that wrote the status subresource and those Options name.
func operatorManagers(meta map[string]any, o Options) map[string]bool {
	operator := map[string]bool{}
	for _, m := range o.OperatorManagers {
		operator[m] = true
	}
	entries, _ := meta["managedFields"].([]any)
	for _, e := range entries {
		em, _ := e.(map[string]any)
		if sub, _ := em["subresource"].(string); sub == "status" {
			m, _ := em["manager"].(string)
			operator[m] = true
		}
	}
	return operator
}

// userFieldSet merges the field sets (FieldsV1) of every manager that is
// not ASO's controller. ok is false when the object has no managed fields
// or only ASO's.
func userFieldSet(meta map[string]any, o Options) (set map[string]any, ok bool) {
	entries, _ := meta["managedFields"].([]any)
	operator := operatorManagers(meta, o)
	set = map[string]any{}
	for _, e := range entries {
		em, _ := e.(map[string]any)
		m, _ := em["manager"].(string)
		if operator[m] {
			continue
		}
		if sub, _ := em["subresource"].(string); sub != "" {
			continue
		}
		fv, _ := em["fieldsV1"].(map[string]any)
		mergeSets(set, fv)
		ok = true
	}
	return set, ok
}

func mergeSets(dst, src map[string]any) {
	for k, v := range src {
		sv, _ := v.(map[string]any)
		dv, has := dst[k].(map[string]any)
		switch {
		case !has:
			dst[k] = deepCopy(sv)
			if dst[k] == nil {
				dst[k] = map[string]any{}
			}
		case len(dv) == 0 || len(sv) == 0:
			// One manager owns the whole value (a leaf or an atomic list
			// or map): the whole value is the user's.
			dst[k] = map[string]any{}
		default:
			mergeSets(dv, sv)
		}
	}
}

// filterFields keeps the parts of v that the field set fs names (FieldsV1:
// "f:name" for a map key, "." for the map itself, "k:"/"v:"/"i:" for list
// items). An empty set owns the whole value. Lists are kept whole when any
// of them is owned: ASO's CRDs have atomic lists.
func filterFields(v any, fs map[string]any) any {
	if len(fs) == 0 {
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		return v
	}
	out := map[string]any{}
	for k, val := range m {
		sub, owned := fs["f:"+k]
		if !owned {
			continue
		}
		sm, _ := sub.(map[string]any)
		out[k] = filterFields(val, sm)
	}
	return out
}

// droppedBesides records the leaf paths of all that kept lacks.
func (c *Object) droppedBesides(path string, all, kept any) {
	am, ok := all.(map[string]any)
	if !ok {
		return
	}
	km, _ := kept.(map[string]any)
	for k, v := range am {
		p := path + "." + k
		kv, has := km[k]
		if !has {
			c.Dropped = append(c.Dropped, p)
			continue
		}
		c.droppedBesides(p, v, kv)
	}
}

// ownerFromReferences sets spec.owner from an ownerReference to an ASO
// object when the spec has none (ASO writes the reference from spec.owner;
// a spec without it lost it), and drops the references either way.
func (c *Object) ownerFromReferences(k *aso.Kind, meta, spec map[string]any) {
	refs, _ := meta["ownerReferences"].([]any)
	if len(refs) == 0 {
		return
	}
	c.Dropped = append(c.Dropped, "metadata.ownerReferences")
	if _, has := spec["owner"]; has || (k.OwnerKind == "" && !k.ArbitraryOwner) {
		return
	}
	for _, r := range refs {
		rm, _ := r.(map[string]any)
		av, _ := rm["apiVersion"].(string)
		group, _, _ := strings.Cut(av, "/")
		kind, _ := rm["kind"].(string)
		name, _ := rm["name"].(string)
		if !aso.IsASOGroup(group) || name == "" {
			continue
		}
		if !k.ArbitraryOwner && (group != k.OwnerGroup || kind != k.OwnerKind) {
			continue
		}
		owner := map[string]any{"name": name}
		if k.ArbitraryOwner {
			owner["group"], owner["kind"] = group, kind
		}
		spec["owner"] = owner
		return
	}
}

// dropDefaultAzureName removes spec.azureName when it is what ASO's
// defaulting webhook writes for an object without one (metadata.name, or
// the UUIDv5 of role resources): an admission webhook's change is recorded
// under the field manager of the request, so the managed fields cannot
// tell it from the user's, and the value is the same either way.
func (c *Object) dropDefaultAzureName(k *aso.Kind, spec map[string]any) {
	got, ok := spec["azureName"].(string)
	if !ok || k.Singleton != "" {
		return
	}
	without := make(map[string]any, len(spec))
	for key, v := range spec {
		if key != "azureName" {
			without[key] = v
		}
	}
	def, err := aso.AzureName(k, c.Namespace, c.Name, without)
	if err == nil && def == got {
		delete(spec, "azureName")
		c.Dropped = append(c.Dropped, "spec.azureName")
	}
}

// uses lists the Secrets and ConfigMaps the object reads.
func (c *Object) uses(k *aso.Kind, spec, annotations map[string]any) error {
	deps, err := aso.Dependencies(k, spec)
	if err != nil {
		return err
	}
	for _, d := range deps {
		switch d.Type {
		case aso.DepSecret, aso.DepSecretMap:
			c.Uses = append(c.Uses, Use{Kind: "Secret", Namespace: c.Namespace, Name: d.Name, Field: d.Field})
		case aso.DepConfigMap:
			c.Uses = append(c.Uses, Use{Kind: "ConfigMap", Namespace: c.Namespace, Name: d.Name, Field: d.Field})
		}
	}
	if s, _ := annotations[aso.AnnotationCredentialFrom].(string); s != "" {
		c.Uses = append(c.Uses, Use{Kind: "Secret", Namespace: c.Namespace, Name: s, Field: "metadata.annotations[" + aso.AnnotationCredentialFrom + "]"})
	}
	return nil
}

func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = deepCopy(e)
		}
		return out
	}
	return v
}

// ForASO returns a manifest of gitaso's repository, as rendered (variables
// substituted), as the ASO object an export writes: ASO reads it as it is,
// reconcile policy included.
func ForASO(content map[string]any) (*Object, error) {
	apiVersion, _ := content["apiVersion"].(string)
	kind, _ := content["kind"].(string)
	meta, _ := content["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	k, ok := aso.LookupAPIVersion(apiVersion, kind)
	if !ok {
		return nil, fmt.Errorf("%s %s/%s (%s): %w", kind, ns, name, apiVersion, ErrNotASO)
	}
	if name == "" || ns == "" {
		return nil, fmt.Errorf("%s %s/%s: metadata.name and metadata.namespace are required", kind, ns, name)
	}
	m, _ := deepCopy(content).(map[string]any)
	c := &Object{Group: k.Group, Version: k.Version, Kind: k.Kind, Namespace: ns, Name: name, Manifest: m, Source: FromGitaso}
	spec, _ := m["spec"].(map[string]any)
	ann := map[string]any{}
	for a, v := range stringMapOf(meta["annotations"]) {
		ann[a] = v
	}
	if err := c.uses(k, spec, ann); err != nil {
		return nil, fmt.Errorf("%s %s/%s: %w", kind, ns, name, err)
	}
	return c, nil
}

func stringMapOf(v any) map[string]string {
	out := map[string]string{}
	m, _ := v.(map[string]any)
	for k, e := range m {
		if s, ok := e.(string); ok {
			out[k] = s
		}
	}
	return out
}
