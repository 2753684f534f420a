package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/gitaso/gitaso/aso"
)

// Inputs reads what gitaso takes from the cluster: credential Secrets (as
// ASO reads them: a namespace's aso-credential, and the Secret a resource
// names in serviceoperator.azure.com/credential-from, in its namespace),
// ConfigMaps and Secrets for substituteFrom, and the OIDC issuer. It watches
// the Secrets it reads and calls OnChange when one changes, so that a
// rotated credential is used without a commit.
type Inputs struct {
	cl  *Cluster
	log *slog.Logger
	// OnChange is called (from a watch goroutine) when a watched Secret or
	// ConfigMap changes; set it before Start.
	OnChange func()
	// Namespaces, when set before Start, are the only namespaces read: one
	// watch of aso-credential per namespace instead of one cluster-wide, and
	// no request for a Secret or ConfigMap elsewhere (it is absent), so that
	// gitaso needs a Role in each namespace rather than a ClusterRole that
	// reads every Secret of the cluster.
	Namespaces []string

	mu       sync.Mutex
	ctx      context.Context
	started  bool
	creds    map[string]cache.Store // aso-credential Secrets by namespace ("": every namespace), from informers
	synced   []cache.InformerSynced
	watching map[string]bool // "Kind/namespace/name" watched one by one
	warned   map[string]bool
}

// NewInputs returns a reader of the cluster's inputs.
func NewInputs(cl *Cluster, log *slog.Logger) *Inputs {
	if log == nil {
		log = slog.Default()
	}
	return &Inputs{cl: cl, log: log, watching: map[string]bool{}, warned: map[string]bool{}}
}

// Start watches every namespace's aso-credential Secret (one watch,
// field-selected by name) until ctx ends, and waits for the first list.
func (in *Inputs) Start(ctx context.Context) error {
	in.mu.Lock()
	if in.started {
		in.mu.Unlock()
		return nil
	}
	in.started, in.ctx = true, ctx
	in.mu.Unlock()
	namespaces := in.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	stores := map[string]cache.Store{}
	var synced []cache.InformerSynced
	for _, ns := range namespaces {
		lw := cache.NewListWatchFromClient(in.cl.Clientset.CoreV1().RESTClient(), "secrets", ns,
			fields.OneTermEqualSelector("metadata.name", aso.NamespaceCredentialSecret))
		inf := cache.NewSharedIndexInformer(lw, &corev1.Secret{}, 0, cache.Indexers{})
		if _, err := inf.AddEventHandler(in.handler()); err != nil {
			return err
		}
		stores[ns] = inf.GetStore()
		synced = append(synced, inf.HasSynced)
		go inf.Run(ctx.Done())
	}
	in.mu.Lock()
	in.creds, in.synced = stores, synced
	in.mu.Unlock()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), synced...) {
		return fmt.Errorf("list the cluster's %s Secrets: not done in 30 s (is the API server reachable, may gitaso list secrets?)", aso.NamespaceCredentialSecret)
	}
	return nil
}

// readable reports whether a namespace is one gitaso reads.
func (in *Inputs) readable(ns string) bool {
	return len(in.Namespaces) == 0 || slices.Contains(in.Namespaces, ns)
}

// credStore is the informer store holding namespace ns's aso-credential.
func (in *Inputs) credStore(ns string) cache.Store {
	in.mu.Lock()
	defer in.mu.Unlock()
	if s, ok := in.creds[ns]; ok {
		return s
	}
	return in.creds[metav1.NamespaceAll]
}

// handler calls OnChange on a change after the first list.
func (in *Inputs) handler() cache.ResourceEventHandler {
	changed := func() {
		if in.OnChange != nil {
			in.OnChange()
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				changed()
			}
		},
		UpdateFunc: func(o, n any) {
			if !sameData(o, n) {
				changed()
			}
		},
		DeleteFunc: func(any) { changed() },
	}
}

func sameData(a, b any) bool {
	switch x := a.(type) {
	case *corev1.Secret:
		y, ok := b.(*corev1.Secret)
		if !ok || len(x.Data) != len(y.Data) {
			return false
		}
		for k, v := range x.Data {
			if string(y.Data[k]) != string(v) {
				return false
			}
		}
		return true
	case *corev1.ConfigMap:
		y, ok := b.(*corev1.ConfigMap)
		if !ok || len(x.Data) != len(y.Data) {
			return false
		}
		for k, v := range x.Data {
			if y.Data[k] != v {
				return false
			}
		}
		return true
	}
	return false
}

// Secrets returns the data of the Secrets named "namespace/name" that exist
// in the cluster (absent ones are left out). aso-credential Secrets come
// from the watch when Start ran; the others are read and then watched.
func (in *Inputs) Secrets(ctx context.Context, keys []string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, k := range keys {
		ns, name, ok := strings.Cut(k, "/")
		if !ok {
			continue
		}
		if !in.readable(ns) {
			continue // outside --cluster-namespaces: absent
		}
		if name == aso.NamespaceCredentialSecret && in.credsSynced() {
			obj, found, err := in.credStore(ns).GetByKey(ns + "/" + name)
			if err != nil {
				return nil, err
			}
			if found {
				out[k] = secretData(obj.(*corev1.Secret))
			}
			continue
		}
		d, found, err := in.get(ctx, true, ns, name)
		if err != nil {
			return nil, err
		}
		if found {
			out[k] = d
		}
		in.watch(true, ns, name)
	}
	return out, nil
}

func (in *Inputs) credsSynced() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.synced) == 0 {
		return false
	}
	for _, f := range in.synced {
		if !f() {
			return false
		}
	}
	return true
}

// Lookup returns a ConfigMap's (or Secret's) data for substituteFrom, and
// watches it. A read error is logged once and reported as absent (the
// renderer then names the missing object, unless it is optional).
func (in *Inputs) Lookup(ctx context.Context, secret bool, namespace, name string) (map[string]string, bool) {
	if !in.readable(namespace) {
		return nil, false
	}
	d, found, err := in.get(ctx, secret, namespace, name)
	if err != nil {
		key := fmt.Sprintf("%v/%s/%s", secret, namespace, name)
		in.mu.Lock()
		first := !in.warned[key]
		in.warned[key] = true
		in.mu.Unlock()
		if first {
			in.log.WarnContext(ctx, "substitute-from: cannot read from the cluster", "kind", kindName(secret), "object", namespace+"/"+name, "error", err)
		}
		return nil, false
	}
	in.watch(secret, namespace, name)
	return d, found
}

func kindName(secret bool) string {
	if secret {
		return "Secret"
	}
	return "ConfigMap"
}

func (in *Inputs) get(ctx context.Context, secret bool, ns, name string) (map[string]string, bool, error) {
	core := in.cl.Clientset.CoreV1()
	if secret {
		s, err := core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read Secret %s/%s from the cluster: %w", ns, name, explainRead(err))
		}
		return secretData(s), true, nil
	}
	c, err := core.ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read ConfigMap %s/%s from the cluster: %w", ns, name, explainRead(err))
	}
	d := map[string]string{}
	for k, v := range c.Data {
		d[k] = v
	}
	for k, v := range c.BinaryData {
		d[k] = string(v)
	}
	return d, true, nil
}

func explainRead(err error) error {
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%w (gitaso's service account needs get, list and watch on the secrets and configmaps it reads: see deploy/helm/gitaso)", err)
	}
	return explain(err)
}

func secretData(s *corev1.Secret) map[string]string {
	d := map[string]string{}
	for k, v := range s.Data {
		d[k] = string(v)
	}
	for k, v := range s.StringData {
		d[k] = v
	}
	return d
}

// watch starts a watch of one object (once), after Start.
func (in *Inputs) watch(secret bool, ns, name string) {
	in.mu.Lock()
	defer in.mu.Unlock()
	key := kindName(secret) + "/" + ns + "/" + name
	if in.ctx == nil || in.watching[key] {
		return
	}
	in.watching[key] = true
	var obj runtime.Object = &corev1.ConfigMap{}
	resource := "configmaps"
	if secret {
		resource, obj = "secrets", &corev1.Secret{}
	}
	lw := cache.NewListWatchFromClient(in.cl.Clientset.CoreV1().RESTClient(), resource, ns, fields.OneTermEqualSelector("metadata.name", name))
	inf := cache.NewSharedIndexInformer(lw, obj, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(in.handler())
	go inf.Run(in.ctx.Done())
}

// Watched lists the objects watched one by one (tests, status).
func (in *Inputs) Watched() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]string, 0, len(in.watching))
	for k := range in.watching {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// OIDCIssuer returns the issuer of the cluster's service-account tokens, from
// the API server's OpenID discovery document (the URL a federated identity
// credential trusts; on AKS the cluster's OIDC issuer).
func (in *Inputs) OIDCIssuer(ctx context.Context) (string, error) {
	b, err := in.cl.Clientset.CoreV1().RESTClient().Get().AbsPath("/.well-known/openid-configuration").DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("read the cluster's OIDC discovery document: %w", explain(err))
	}
	var doc struct {
		Issuer string `json:"issuer"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Issuer == "" {
		return "", fmt.Errorf("the cluster's OIDC discovery document names no issuer")
	}
	return doc.Issuer, nil
}
