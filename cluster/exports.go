package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"

	"github.com/fluxcd/pkg/ssa"
	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

var setLogger sync.Once

// quietControllerRuntime routes controller-runtime's logs (its client's
// warnings) to gitaso's logger; without a logger it prints a stack trace
// on stderr.
func quietControllerRuntime(log *slog.Logger) {
	setLogger.Do(func() { ctrllog.SetLogger(logr.FromSlogHandler(log.Handler())) })
}

// Labels and annotations on every object gitaso exports into a cluster.
const (
	// LabelManagedBy is app.kubernetes.io/managed-by: gitaso.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelInstance names the gitaso instance (several may share a cluster,
	// each prunes only its own objects).
	LabelInstance = "gitaso.io/instance"
	// LabelOwner is a hash of the owning resource's key (label values are
	// limited to 63 characters; the key is in AnnotationOwner).
	LabelOwner = "gitaso.io/owner-hash"
	// AnnotationOwner is the owning gitaso resource, namespace/group/Kind/name.
	AnnotationOwner = "gitaso.io/owner"
	// AnnotationARMID is the Azure resource the values come from.
	AnnotationARMID = "gitaso.io/arm-id"
)

// Export is one ConfigMap or Secret a gitaso resource exports (its
// operatorSpec configMaps, secrets and CEL expressions).
type Export struct {
	// Owner is the gitaso resource's key, namespace/group/Kind/name.
	Owner string
	ARMID string
	// Namespace is the resource's namespace; exports land there (ASO's rule).
	Namespace, Name string
	Secret          bool
	// Data holds the values; for a Secret they never reach a log or an
	// error.
	Data map[string]string
}

// ID names the object, "ConfigMap team-a/settings".
func (e Export) ID() string {
	return e.kind() + " " + e.Namespace + "/" + e.Name
}

func (e Export) kind() string {
	if e.Secret {
		return "Secret"
	}
	return "ConfigMap"
}

func (e Export) objectKey() string { return e.kind() + "/" + e.Namespace + "/" + e.Name }

// digest covers everything applied, so that an unchanged export is not sent
// again.
func (e Export) digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", e.objectKey(), e.Owner, e.ARMID)
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(h, "%s\x00%s\x00", k, e.Data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ConflictError is returned for an export gitaso will not write: the object
// exists and gitaso does not own it, or another field manager owns fields
// gitaso would change. Nothing was overwritten.
type ConflictError struct {
	Object string // "ConfigMap team-a/settings"
	Reason string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: %s; gitaso does not overwrite it", e.Object, e.Reason)
}

// ErrNamespaceNotFound is returned (wrapped) when an export's namespace does
// not exist in the cluster: like ASO, gitaso does not create namespaces.
var ErrNamespaceNotFound = errors.New("namespace not found")

// ExporterOptions configure an Exporter.
type ExporterOptions struct {
	// Instance labels the objects of this gitaso instance (default "gitaso").
	Instance string
	// Namespaces, when set, restricts pruning to these namespaces (a shard).
	Namespaces func(namespace string) bool
	// ListNamespaces, when set, are the only namespaces the first sync lists
	// gitaso's objects in (one list each instead of one cluster-wide), for a
	// Role per namespace instead of a ClusterRole (--cluster-namespaces).
	ListNamespaces []string
	// Parallelism bounds concurrent API requests (default 16).
	Parallelism int
	Logger      *slog.Logger
}

// Exporter writes exports into the cluster with server-side apply (field
// manager "gitaso", never forcing ownership) and removes the ones that go.
// It remembers what it applied, so that a sync sends only what changed; the
// first sync after start reads what the cluster holds.
type Exporter struct {
	c    client.Client
	rm   *ssa.ResourceManager
	opts ExporterOptions

	mu      sync.Mutex
	applied map[string]string // object key → digest of what was applied
	synced  bool              // the cluster's objects were listed once
}

// NewExporter returns an Exporter for the cluster.
func NewExporter(cl *Cluster, opts ExporterOptions) (*Exporter, error) {
	c, err := client.New(cl.Config, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	if opts.Instance == "" {
		opts.Instance = "gitaso"
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 16
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	quietControllerRuntime(opts.Logger)
	rm := ssa.NewResourceManager(c, nil, ssa.Owner{Field: FieldManager, Group: "gitaso.io"})
	return &Exporter{c: c, rm: rm, opts: opts, applied: map[string]string{}}, nil
}

// SyncResult is what one sync did.
type SyncResult struct {
	Applied, Unchanged, Deleted int
	// Errors are per owning resource key.
	Errors map[string]error
}

// Sync makes the cluster hold exactly want (for this instance): it applies
// the objects that are new or changed and deletes gitaso's objects that are
// no longer wanted. Failures are per owner; the rest goes on.
func (x *Exporter) Sync(ctx context.Context, want []Export) (*SyncResult, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	res := &SyncResult{Errors: map[string]error{}}
	owned := map[string]objectMeta{} // what the cluster holds of ours (first sync)
	if !x.synced {
		var err error
		if owned, err = x.listOwned(ctx); err != nil {
			return nil, err
		}
	}
	// One owner per object: a second resource exporting to the same object
	// is refused (ASO refuses to write an object another resource owns).
	byKey := map[string]Export{}
	var wanted []Export
	for _, e := range want {
		k := e.objectKey()
		if prev, ok := byKey[k]; ok && prev.Owner != e.Owner {
			first, second := prev, e
			if second.Owner < first.Owner {
				first, second = second, first
			}
			res.Errors[second.Owner] = &ConflictError{Object: e.ID(), Reason: "already exported by " + first.Owner}
			continue
		}
		byKey[k] = e
		wanted = append(wanted, e)
	}
	// Apply what changed.
	type outcome struct {
		key, digest string
		changed     bool
		err         error
	}
	out := make([]outcome, len(wanted))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(x.opts.Parallelism)
	for i, e := range wanted {
		d := e.digest()
		if x.applied[e.objectKey()] == d {
			res.Unchanged++
			out[i] = outcome{key: e.objectKey(), digest: d}
			continue
		}
		meta, known := owned[e.objectKey()]
		if _, applied := x.applied[e.objectKey()]; applied {
			known = true
		}
		g.Go(func() error {
			changed, err := x.apply(gctx, e, known, meta)
			out[i] = outcome{key: e.objectKey(), digest: d, changed: changed, err: err}
			return nil
		})
	}
	_ = g.Wait()
	for i, o := range out {
		if o.key == "" {
			continue
		}
		if o.err != nil {
			res.Errors[wanted[i].Owner] = o.err
			delete(x.applied, o.key)
			continue
		}
		if x.applied[o.key] != o.digest {
			if o.changed {
				res.Applied++
			} else {
				res.Unchanged++
			}
		}
		x.applied[o.key] = o.digest
	}
	// Delete what is no longer wanted: what this process applied before
	// and, on the first sync, what the cluster held of this instance.
	gone := map[string]objectMeta{}
	for k := range x.applied {
		if _, ok := byKey[k]; !ok {
			gone[k] = parseObjectKey(k)
		}
	}
	for k, m := range owned {
		if _, ok := byKey[k]; !ok {
			gone[k] = m
		}
	}
	keys := make([]string, 0, len(gone))
	for k := range gone {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	derrs := make([]error, len(keys))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(x.opts.Parallelism)
	for i, k := range keys {
		m := gone[k]
		if x.opts.Namespaces != nil && !x.opts.Namespaces(m.namespace) {
			continue
		}
		g.Go(func() error {
			derrs[i] = x.delete(gctx, m)
			return nil
		})
	}
	_ = g.Wait()
	for i, k := range keys {
		if x.opts.Namespaces != nil && !x.opts.Namespaces(gone[k].namespace) {
			continue
		}
		if derrs[i] != nil {
			owner := gone[k].owner
			if owner == "" {
				owner = k
			}
			res.Errors[owner] = derrs[i]
			continue
		}
		delete(x.applied, k)
		res.Deleted++
	}
	x.synced = true
	if len(res.Errors) == 0 {
		res.Errors = nil
	}
	return res, nil
}

// objectMeta is what gitaso knows of one of its objects in the cluster.
type objectMeta struct {
	secret          bool
	namespace, name string
	owner           string
	resourceVersion string
}

func (m objectMeta) kind() string {
	if m.secret {
		return "Secret"
	}
	return "ConfigMap"
}

func parseObjectKey(k string) objectMeta {
	kind, rest, _ := strings.Cut(k, "/")
	ns, name, _ := strings.Cut(rest, "/")
	return objectMeta{secret: kind == "Secret", namespace: ns, name: name}
}

var (
	configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	secretGVK    = schema.GroupVersionKind{Version: "v1", Kind: "Secret"}
)

// listOwned lists this instance's objects (metadata only: Secret values are
// not read).
func (x *Exporter) listOwned(ctx context.Context) (map[string]objectMeta, error) {
	out := map[string]objectMeta{}
	for _, gvk := range []schema.GroupVersionKind{configMapGVK, secretGVK} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Version: "v1", Kind: gvk.Kind + "List"})
		sel := client.MatchingLabels{LabelManagedBy: "gitaso", LabelInstance: x.opts.Instance}
		namespaces := x.opts.ListNamespaces
		if len(namespaces) == 0 {
			namespaces = []string{metav1.NamespaceAll}
		}
		for _, ns := range namespaces {
			cont := ""
			for {
				if err := x.c.List(ctx, list, sel, client.InNamespace(ns), client.Limit(500), client.Continue(cont)); err != nil {
					return nil, fmt.Errorf("list gitaso's %ss: %w", gvk.Kind, explain(err))
				}
				for _, o := range list.Items {
					m := objectMeta{secret: gvk.Kind == "Secret", namespace: o.Namespace, name: o.Name,
						owner: o.Annotations[AnnotationOwner], resourceVersion: o.ResourceVersion}
					out[m.kind()+"/"+m.namespace+"/"+m.name] = m
				}
				if cont = list.Continue; cont == "" {
					break
				}
			}
		}
	}
	return out, nil
}

// apply writes one export. known says the object is gitaso's (listed with
// its labels, or applied by this process); otherwise it must not exist yet:
// an object gitaso does not own is never touched.
func (x *Exporter) apply(ctx context.Context, e Export, known bool, meta objectMeta) (bool, error) {
	if known && meta.owner != "" && meta.owner != e.Owner {
		return false, &ConflictError{Object: e.ID(), Reason: "exported by " + meta.owner}
	}
	if !known {
		cur := &metav1.PartialObjectMetadata{}
		cur.SetGroupVersionKind(gvkOf(e.Secret))
		err := x.c.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Name}, cur)
		switch {
		case err == nil:
			if cur.Labels[LabelManagedBy] != "gitaso" || cur.Labels[LabelInstance] != x.opts.Instance {
				return false, &ConflictError{Object: e.ID(), Reason: "it exists and is not managed by gitaso" + managers(cur.ManagedFields)}
			}
			if o := cur.Annotations[AnnotationOwner]; o != "" && o != e.Owner {
				return false, &ConflictError{Object: e.ID(), Reason: "exported by " + o}
			}
		case apierrors.IsNotFound(err):
		default:
			return false, fmt.Errorf("read %s: %w", e.ID(), explain(err))
		}
	}
	obj := x.object(e)
	// Server-side apply without forcing ownership: a field another manager
	// owns is a conflict (409), reported, never overwritten. (ssa's
	// ResourceManager.Apply forces ownership, which would overwrite it.)
	err := x.c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager))
	if err == nil {
		return true, nil
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) && apierrors.IsConflict(err) {
		return false, &ConflictError{Object: e.ID(), Reason: conflictReason(status.Status())}
	}
	if apierrors.IsNotFound(err) {
		return false, fmt.Errorf("export %s: %w %q (gitaso does not create namespaces)", e.ID(), ErrNamespaceNotFound, e.Namespace)
	}
	return false, fmt.Errorf("export %s: %w", e.ID(), explain(err))
}

func gvkOf(secret bool) schema.GroupVersionKind {
	if secret {
		return secretGVK
	}
	return configMapGVK
}

// object builds the applied object: the data and gitaso's labels and
// annotations, nothing else (server-side apply owns exactly these fields).
func (x *Exporter) object(e Export) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(gvkOf(e.Secret))
	u.SetNamespace(e.Namespace)
	u.SetName(e.Name)
	u.SetLabels(map[string]string{LabelManagedBy: "gitaso", LabelInstance: x.opts.Instance, LabelOwner: ownerHash(e.Owner)})
	ann := map[string]string{AnnotationOwner: e.Owner}
	if e.ARMID != "" {
		ann[AnnotationARMID] = e.ARMID
	}
	u.SetAnnotations(ann)
	data := map[string]any{}
	for k, v := range e.Data {
		data[k] = v
	}
	if e.Secret {
		u.Object["type"] = string(corev1.SecretTypeOpaque)
		u.Object["stringData"] = data
	} else {
		u.Object["data"] = data
	}
	return u
}

// delete removes one of gitaso's objects, only if it still carries
// gitaso's labels (a person who took the object over by removing them
// keeps it).
func (x *Exporter) delete(ctx context.Context, m objectMeta) error {
	cur := &metav1.PartialObjectMetadata{}
	cur.SetGroupVersionKind(gvkOf(m.secret))
	err := x.c.Get(ctx, client.ObjectKey{Namespace: m.namespace, Name: m.name}, cur)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s %s/%s: %w", m.kind(), m.namespace, m.name, explain(err))
	}
	if cur.Labels[LabelManagedBy] != "gitaso" || cur.Labels[LabelInstance] != x.opts.Instance {
		return nil
	}
	err = x.c.Delete(ctx, cur, client.Preconditions{ResourceVersion: &cur.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s/%s: %w", m.kind(), m.namespace, m.name, explain(err))
	}
	return nil
}

// Manager returns the fluxcd/pkg/ssa resource manager on the same client
// (diffs and waits for tests and tools).
func (x *Exporter) Manager() *ssa.ResourceManager { return x.rm }

func ownerHash(owner string) string {
	s := sha256.Sum256([]byte(owner))
	return hex.EncodeToString(s[:])[:40]
}

// conflictReason turns a 409 from server-side apply into "field data.key
// is managed by \"kubectl-edit\"" lines; the API server names fields and
// managers, never values.
func conflictReason(s metav1.Status) string {
	var parts []string
	if s.Details != nil {
		for _, c := range s.Details.Causes {
			if c.Type == metav1.CauseTypeFieldManagerConflict {
				parts = append(parts, fmt.Sprintf("field %s is managed by another field manager (%s)", strings.TrimPrefix(c.Field, "."), c.Message))
			}
		}
	}
	if len(parts) == 0 {
		return "conflict: " + s.Message
	}
	return strings.Join(parts, "; ")
}

func managers(mf []metav1.ManagedFieldsEntry) string {
	seen := map[string]bool{}
	var names []string
	for _, m := range mf {
		if !seen[m.Manager] {
			seen[m.Manager] = true
			names = append(names, fmt.Sprintf("%q", m.Manager))
		}
	}
	if len(names) == 0 {
		return ""
	}
	return " (field managers " + strings.Join(names, ", ") + ")"
}

// explain adds what to do to the errors a newcomer meets first.
func explain(err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w (gitaso's service account needs get, list, create, patch and delete on configmaps and secrets: see deploy/helm/gitaso)", err)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w (the kubeconfig's credentials were refused)", err)
	}
	return err
}

// Forget drops what the Exporter remembers having applied: the next Sync
// applies every export again (and reports a conflict with a person's edit
// of a value gitaso owns) and lists the cluster's objects again.
func (x *Exporter) Forget() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.applied = map[string]string{}
	x.synced = false
}
