package planner

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// Options are the settings that shape a graph.
type Options struct {
	// SubscriptionID is the global credential's subscription.
	SubscriptionID string
	// SubscriptionUnknown says SubscriptionID stands in for a subscription
	// nobody named (offline validation): ARM IDs are not checked against it.
	SubscriptionUnknown bool
	// Secrets are secrets that do not live in the repository (the local
	// credentials directory), keyed "namespace/name". Repository secrets of
	// the same name win.
	Secrets map[string]map[string]string
	// DefaultPolicy is the reconcile policy of resources without the
	// annotation (ASO's DEFAULT_RECONCILE_POLICY); "" means manage.
	DefaultPolicy string
	// NamespacePolicy overrides DefaultPolicy per namespace.
	NamespacePolicy map[string]string
	// UnitDependsOn are the Flux units' spec.dependsOn, unit ID → the IDs
	// of the units it depends on: every object of a unit is applied after
	// every object of the units it depends on (and skipped when one of
	// them fails), as Flux applies a Kustomization only once those it
	// depends on are Ready.
	UnitDependsOn map[string][]string
}

// Graph is the resolved dependency graph of one snapshot.
type Graph struct {
	Revision string
	// External are the snapshot's sources outside the repository.
	External []manifest.External
	// Nodes in a deterministic topological order: every node comes after the
	// nodes it depends on.
	Nodes []*Node

	// Deferred are the objects set aside until a value they use exists
	// (see Deferred), sorted by key.
	Deferred []*Deferred

	byKey        map[string]*Node
	deferredKeys map[string]bool
	byARMID      armIndex // ARM ID (any case) → node
	inputs       *inputs
	ignored      []manifest.Object
}

// Node is one ASO resource with everything needed to convert it.
type Node struct {
	Object       manifest.Object
	Kind         *aso.Kind
	Spec         map[string]any
	Namespace    string
	Name         string
	AzureName    string
	ARMID        string
	Policy       aso.ReconcilePolicy
	Credential   string // "global" or "namespace/secret-name"
	Subscription string
	Deps         []aso.Dep
	Exports      []Export

	// DependsOn are the keys of the nodes this one waits for.
	DependsOn []string

	// kept is set when the node's ARM name comes from state rather than
	// from ASO's default (keepname.go).
	kept *keptName

	// key is Key() built once: the graph, the plan and the run share it.
	key       string
	owner     *Node
	ownerByID *Node // owner given by armId that the snapshot declares
	ownerARM  string
	ownerErr  error
	resolving bool
}

// Export is one operatorSpec destination a resource writes after apply.
type Export struct {
	Secret bool   `json:"secret,omitempty"` // operatorSpec.secrets / secretExpressions
	Source string `json:"source"`           // the export's name (e.g. principalId) or CEL expression
	Expr   bool   `json:"expr,omitempty"`   // Source is a CEL expression
	Name   string `json:"name"`             // config map or secret name
	Key    string `json:"key,omitempty"`
}

// Key is the node's state key.
func (n *Node) Key() string {
	if n.key != "" {
		return n.key
	}
	return Key(n.Namespace, n.Kind.Group, n.Kind.Kind, n.Name)
}

// ID is namespace/Kind/name.
func (n *Node) ID() string { return n.Namespace + "/" + n.Kind.Kind + "/" + n.Name }

// Node returns the node with the given key.
func (g *Graph) Node(key string) *Node { return g.byKey[key] }

// Ignored returns objects of kinds gitaso does not manage.
func (g *Graph) Ignored() []manifest.Object { return g.ignored }

func objErr(o manifest.Object, field, format string, args ...any) *diag.Error {
	return &diag.Error{File: o.File, Line: o.Line, Object: o.ID(), Field: field, Msg: fmt.Sprintf(format, args...)}
}

// misspeltGroup reports an object whose group is probably meant to be an
// ASO one (a typo of *.azure.com, or ASO v1's azure.microsoft.com) instead of
// letting it be ignored as a foreign kind.
func misspeltGroup(o manifest.Object) *diag.Error {
	if !aso.LooksLikeASO(o.Group()) {
		return nil
	}
	msg := fmt.Sprintf("%s is not an ASO API group", o.APIVersion())
	if s := suggestKinds(o.Group(), o.Version(), o.Kind()); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return objErr(o, "apiVersion", "%s", msg)
}

// lookupKind finds an ASO object's kind in the catalog, or says which kinds
// were probably meant.
func lookupKind(o manifest.Object) (*aso.Kind, *diag.Error) {
	k, ok := aso.Lookup(o.Group(), o.Version(), o.Kind())
	if ok {
		return k, nil
	}
	// The field to fix: the version when the group has the kind in another
	// version, else the kind.
	field := "kind"
	var served []*aso.Kind
	for _, c := range aso.Kinds() {
		if c.Group == o.Group() && c.Kind == o.Kind() {
			field = "apiVersion"
			served = append(served, c)
		}
	}
	msg := fmt.Sprintf("unknown ASO kind %s %s", o.APIVersion(), o.Kind())
	if r, ok := aso.LookupRemoved(o.Group(), o.Version(), o.Kind()); ok {
		// A version a release since v2.0 had whose facts the catalog
		// lacks (Lookup finds the others, which plan with a warning):
		// which release removed it, and what replaces it.
		return nil, objErr(o, "apiVersion", "%s: %s", msg, r.Message())
	}
	if v := o.Version(); len(served) > 0 && (strings.HasPrefix(v, "v1beta") || strings.HasPrefix(v, "v1alpha")) {
		// An older one (before v2.0's releases as read): the versions
		// serving the kind, the same Azure API version first.
		return nil, objErr(o, field, "%s", servedElsewhere(o, served))
	}
	if s := suggestKinds(o.Group(), o.Version(), o.Kind()); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return nil, objErr(o, field, "%s", msg)
}

// objectErrors validates one object's fields, naming its file and line.
func objectErrors(k *aso.Kind, o manifest.Object) diag.List {
	l := validateObject(k, o.Content)
	for _, e := range l {
		e.File, e.Line, e.Object = o.File, o.Line, o.ID()
	}
	return l
}

// ValidateObjects checks each object on its own (kind, fields, enums,
// required fields), without resolving owners or references: what can be
// reported for the files of a commit that did parse when another file did
// not.
func ValidateObjects(objs []manifest.Object) diag.List {
	var errs diag.List
	for _, o := range objs {
		if !aso.IsASOGroup(o.Group()) {
			if e := misspeltGroup(o); e != nil {
				errs = append(errs, e)
			}
			continue
		}
		k, e := lookupKind(o)
		if e != nil {
			errs = append(errs, e)
			continue
		}
		errs = append(errs, objectErrors(k, o)...)
	}
	return errs
}

// Build resolves a snapshot into a graph. Every input error of the snapshot is
// returned together as a diag.List; a graph is returned only when there are
// none.
func Build(snap *manifest.Snapshot, opts Options) (*Graph, error) {
	g := &Graph{Revision: snap.Revision, External: snap.External, byKey: make(map[string]*Node, len(snap.Objects)), ignored: snap.Ignored}
	g.inputs = newInputs(opts.Secrets)
	var errs diag.List

	// Objects the source set aside as foreign kinds may be misspelt ASO ones.
	g.ignored = nil
	for _, o := range snap.Ignored {
		if e := misspeltGroup(o); e != nil {
			errs = append(errs, e)
			continue
		}
		g.ignored = append(g.ignored, o)
	}

	// Inputs first.
	pendingInputs := map[string][]string{} // "configmap:ns/name" or "secret:ns/name" → variables it waits for
	for _, o := range snap.Objects {
		if o.Group() != "" || o.Version() != "v1" {
			continue
		}
		if v := manifest.PendingVars(o); len(v) > 0 && (o.Kind() == "ConfigMap" || o.Kind() == "Secret") {
			pendingInputs[strings.ToLower(o.Kind())+":"+o.Namespace()+"/"+o.Name()] = v
			continue
		}
		switch o.Kind() {
		case "ConfigMap":
			data, err := manifest.ConfigMapData(o)
			if err != nil {
				errs = append(errs, objErr(o, "data", "%v", err))
				continue
			}
			g.inputs.addConfigMap(o.Namespace(), o.Name(), data, o.Secrets)
		case "Secret":
			data, err := manifest.SecretData(o)
			if err != nil {
				errs = append(errs, objErr(o, "data", "%v", err))
				continue
			}
			g.inputs.addSecret(o.Namespace(), o.Name(), data)
		}
	}

	// ASO objects.
	var pending []pendingNode
	// The fields each node's own checks found wrong: what resolving its
	// owner and references would say of the same fields is not said again.
	invalid := map[*Node][]string{}
	own := checkObjects(snap.Objects)
	for i, o := range snap.Objects {
		c := &own[i]
		if !aso.IsASOGroup(o.Group()) {
			if e := misspeltGroup(o); e != nil {
				errs = append(errs, e)
				continue
			}
			if !(o.Group() == "" && o.Version() == "v1" && (o.Kind() == "ConfigMap" || o.Kind() == "Secret")) {
				g.ignored = append(g.ignored, o)
			}
			continue
		}
		k, e := c.kind, c.kindErr
		if e != nil {
			errs = append(errs, e)
			continue
		}
		spec := c.spec
		n := &Node{Object: o, Kind: k, Spec: spec, Namespace: o.Namespace(), Name: o.Name()}
		n.key = Key(n.Namespace, k.Group, k.Kind, n.Name)
		if v := c.pending; len(v) > 0 {
			// Checked once its values exist (deferred.go).
			n.Deps = c.deps
			n.Exports = c.exports
			pending = append(pending, pendingNode{n: n, vars: v})
			continue
		}
		if prev, dup := g.byKey[n.Key()]; dup {
			errs = append(errs, objErr(o, "metadata.name", "%s is also declared in %s:%d", n.ID(), prev.Object.File, prev.Object.Line))
			continue
		}
		checked := c.checked
		errs = append(errs, checked...)
		for _, e := range checked {
			invalid[n] = append(invalid[n], e.Field)
		}
		an, err := c.azureName, c.azureNameErr
		if err != nil {
			errs = append(errs, objErr(o, "spec.azureName", "%v", err))
			continue
		}
		n.AzureName = an
		if n.Policy, err = aso.ParseReconcilePolicy(policyOf(o, opts)); err != nil {
			errs = append(errs, objErr(o, "metadata.annotations."+aso.AnnotationReconcilePolicy, "%v", err))
		}
		deps, err := c.deps, c.depsErr
		if l := diag.AsList(err); len(l) > 0 {
			for _, e := range l {
				if related(invalid[n], e.Field) {
					continue // the field's own error says it
				}
				e.File, e.Line, e.Object = o.File, o.Line, o.ID()
				errs = append(errs, e)
			}
		} else if err != nil {
			errs = append(errs, objErr(o, "spec", "%v", err))
		}
		n.Deps = deps
		n.Exports = c.exports
		g.byKey[n.Key()] = n
		g.Nodes = append(g.Nodes, n)
	}

	// Objects waiting for values a resource exports once applied.
	all := slices.Clone(g.Nodes)
	for _, p := range pending {
		all = append(all, p.n)
	}
	sources, es := checkPending(snap.External, all)
	errs = append(errs, es...)
	g.deferPending(pending, pendingInputs, sources)

	// Credentials and subscriptions.
	badCred := map[*Node]bool{}
	for _, n := range g.Nodes {
		if e := g.chooseCredential(n, opts); e != nil {
			errs = append(errs, e)
			badCred[n] = true
		}
	}
	// Exports: who produces which config map / secret key.
	producers := map[string]*Node{}
	for _, n := range g.Nodes {
		for _, ex := range n.Exports {
			k := exportKey(n.Namespace, ex.Secret, ex.Name, ex.Key)
			if p, dup := producers[k]; dup {
				errs = append(errs, objErr(n.Object, "spec.operatorSpec", "%s %s/%s is also written by %s", kindWord(ex.Secret), ex.Name, ex.Key, p.ID()))
				continue
			}
			if !ex.Secret && g.inputs.hasConfigMap(n.Namespace, ex.Name) || ex.Secret && g.inputs.hasSecret(n.Namespace, ex.Name) {
				errs = append(errs, objErr(n.Object, "spec.operatorSpec", "%s %s is declared in the repository and also written by this resource", kindWord(ex.Secret), ex.Name))
				continue
			}
			producers[k] = n
		}
	}
	g.inputs.producers = producers

	// Owners and ARM IDs.
	for _, n := range g.Nodes {
		if badCred[n] {
			continue // no subscription: its ARM ID cannot be built, already reported
		}
		if _, err := g.resolveARMID(n); err != nil {
			if of := (*ownerFailed)(nil); errors.As(err, &of) {
				continue // reported at the owner (or the owner's owner)
			}
			if de, ok := err.(*diag.Error); ok {
				if related(invalid[n], de.Field) {
					continue // the field's own error says it
				}
				if de.File == "" {
					de.File, de.Line, de.Object = n.Object.File, n.Object.Line, n.ID()
				}
				errs = append(errs, de)
			} else {
				errs = append(errs, objErr(n.Object, "spec.owner", "%v", err))
			}
		}
	}
	// Two manifests claiming one ARM ID.
	byID := make(armIndex, len(g.Nodes))
	for _, n := range g.Nodes {
		if n.ARMID == "" {
			continue
		}
		if p := byID.add(n); p != nil {
			errs = append(errs, objErr(n.Object, "", "ARM ID %s is also claimed by %s (%s:%d)", n.ARMID, p.ID(), p.Object.File, p.Object.Line))
		}
	}
	g.byARMID = byID

	// ASO refuses a resource whose ARM ID lies in another subscription than
	// its credential's (SubscriptionMismatch); so does gitaso, before
	// anything is sent.
	for _, n := range g.Nodes {
		if n.Credential == aso.GlobalCredential && opts.SubscriptionUnknown {
			continue
		}
		if mismatch := aso.CheckSubscription(n.ARMID, n.Credential, n.Subscription); mismatch != nil {
			field := "spec.owner.armId"
			if _, ok := aso.Owner(n.Spec); !ok || n.Kind.Scope == aso.ScopeLocation {
				field = "spec.owner"
			}
			errs = append(errs, objErr(n.Object, field, "%v", mismatch))
		}
	}

	// Edges.
	for _, n := range g.Nodes {
		errs = append(errs, g.edges(n)...)
	}
	if errs = dedupe(errs); len(errs) > 0 {
		return nil, scrubList(errs, snap.Objects)
	}
	g.unitEdges(opts.UnitDependsOn)
	order, err := topoSort(g)
	if err != nil {
		return nil, err
	}
	g.Nodes = order
	return g, nil
}

// objectChecks is what Build learns of one ASO object on its own: its kind,
// its spec, the variables it waits for, its own field errors (unless it
// waits), its azureName, its dependencies and its exports.
type objectChecks struct {
	kind         *aso.Kind
	kindErr      *diag.Error
	spec         map[string]any
	pending      []string
	checked      diag.List
	azureName    string
	azureNameErr error
	deps         []aso.Dep
	depsErr      error
	exports      []Export
}

// checkObjects runs the checks of each ASO object on its own on all CPUs:
// they read the object and the catalog only, and each goroutine writes its
// own slots. Objects of other groups get none.
func checkObjects(objs []manifest.Object) []objectChecks {
	out := make([]objectChecks, len(objs))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(objs) {
				return
			}
			o, c := objs[i], &out[i]
			if !aso.IsASOGroup(o.Group()) {
				continue
			}
			if c.kind, c.kindErr = lookupKind(o); c.kindErr != nil {
				continue
			}
			c.spec, _ = o.Content["spec"].(map[string]any)
			if c.spec == nil {
				c.spec = map[string]any{}
			}
			c.exports = exportsOf(c.spec)
			if c.pending = manifest.PendingVars(o); len(c.pending) > 0 {
				c.deps, _ = aso.Dependencies(c.kind, c.spec)
				continue
			}
			c.checked = objectErrors(c.kind, o)
			c.azureName, c.azureNameErr = aso.AzureName(c.kind, o.Namespace(), o.Name(), c.spec)
			c.deps, c.depsErr = aso.Dependencies(c.kind, c.spec)
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(objs)/64+1) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return out
}

func kindWord(secret bool) string {
	if secret {
		return "secret"
	}
	return "config map"
}

func exportKey(ns string, secret bool, name, key string) string {
	if secret {
		return "secret:" + ns + "/" + name + "/" + key
	}
	return "configmap:" + ns + "/" + name + "/" + key
}

func dedupe(l diag.List) diag.List {
	seen := map[string]bool{}
	var out diag.List
	for _, e := range l {
		s := e.Error()
		if !seen[s] {
			seen[s] = true
			out = append(out, e)
		}
	}
	return out
}

func policyOf(o manifest.Object, opts Options) string {
	if p := o.Annotations()[aso.AnnotationReconcilePolicy]; p != "" {
		return p
	}
	if p := opts.NamespacePolicy[o.Namespace()]; p != "" {
		return p
	}
	if opts.DefaultPolicy != "" {
		return opts.DefaultPolicy
	}
	return string(aso.ReconcilePolicyManage)
}

// chooseCredential picks the node's credential by ASO's rule
// (aso.ChooseCredential).
func (g *Graph) chooseCredential(n *Node, opts Options) *diag.Error {
	c, err := aso.ChooseCredential(n.Namespace, n.Object.Annotations(), opts.SubscriptionID, g.inputs.secret)
	n.Credential, n.Subscription = c.Name, c.Subscription
	if err != nil {
		return objErr(n.Object, err.Field, "%s", err.Msg)
	}
	return nil
}

// resolveARMID computes the node's ARM ID through its owner chain.
func (g *Graph) resolveARMID(n *Node) (string, error) {
	if n.ARMID != "" {
		return n.ARMID, nil
	}
	if n.ownerErr != nil {
		return "", n.ownerErr
	}
	if n.resolving {
		n.ownerErr = objErr(n.Object, "spec.owner", "owner cycle through %s", n.ID())
		return "", n.ownerErr
	}
	n.resolving = true
	defer func() { n.resolving = false }()

	ownerID := ""
	if n.Kind.Scope != "location" && n.Kind.Scope != "tenant" {
		ref, ok := aso.Owner(n.Spec)
		switch {
		case !ok:
			n.ownerErr = objErr(n.Object, "spec.owner", "owner is required for %s", n.Kind.Kind)
			return "", n.ownerErr
		case ref.ARMID != "":
			if want, got, ok := ownerARMTypeOK(n.Kind, ref.ARMID); !ok {
				n.ownerErr = objErr(n.Object, "spec.owner.armId", "the owner of a %s must be a %s (%s), got the ID of a %s", n.Kind.Kind, n.Kind.OwnerKind, want, got)
				return "", n.ownerErr
			}
			ownerID = ref.ARMID
		default:
			group, kind := ref.Group, ref.Kind
			if !n.Kind.ArbitraryOwner {
				if (group != "" && group != n.Kind.OwnerGroup) || (kind != "" && kind != n.Kind.OwnerKind) {
					n.ownerErr = objErr(n.Object, "spec.owner", "the owner of a %s must be a %s (%s), not %s", n.Kind.Kind, n.Kind.OwnerKind, n.Kind.OwnerGroup, strings.Trim(group+"/"+kind, "/"))
					return "", n.ownerErr
				}
				group, kind = n.Kind.OwnerGroup, n.Kind.OwnerKind
			}
			if ref.Name == "" {
				n.ownerErr = objErr(n.Object, "spec.owner.name", "owner name is empty")
				return "", n.ownerErr
			}
			if group == "" || kind == "" {
				n.ownerErr = objErr(n.Object, "spec.owner", "an owner by name needs group and kind for %s", n.Kind.Kind)
				return "", n.ownerErr
			}
			o := g.byKey[Key(n.Namespace, group, kind, ref.Name)]
			if o == nil {
				o = g.findLoose(n.Namespace, group, kind, ref.Name)
			}
			if o == nil {
				n.ownerErr = objErr(n.Object, "spec.owner.name", "owner %s %q not found in namespace %q%s", kind, ref.Name, n.Namespace, g.elsewhere(n, group, kind, ref.Name))
				return "", n.ownerErr
			}
			n.owner = o
			id, err := g.resolveARMID(o)
			if err != nil {
				if n.ownerErr == nil { // else an owner cycle back to n has set n's own error
					// The owner's own error says what is wrong: one problem, one error.
					n.ownerErr = &ownerFailed{owner: o.ID(), cause: err}
				}
				return "", n.ownerErr
			}
			ownerID = id
		}
	}
	id, err := aso.ARMID(n.Kind, n.Subscription, ownerID, n.AzureName)
	if err != nil {
		n.ownerErr = objErr(n.Object, "spec.owner", "%v", err)
		return "", n.ownerErr
	}
	n.ARMID = id
	n.ownerARM = ownerID
	return id, nil
}

// related reports whether field is one of fields, or a parent or child of
// one of them.
func related(fields []string, field string) bool {
	for _, f := range fields {
		if f == field || strings.HasPrefix(f, field+".") || strings.HasPrefix(field, f+".") {
			return true
		}
	}
	return false
}

// ownerFailed is the ARM ID error of a node whose owner's ARM ID failed:
// the owner's error is reported, not this one.
type ownerFailed struct {
	owner string
	cause error
}

func (e *ownerFailed) Error() string { return "owner " + e.owner + ": " + shortErr(e.cause) }
func (e *ownerFailed) Unwrap() error { return e.cause }

// elsewhere explains a dependency of n not found in n's namespace when an
// object of that kind and name is declared in another one (owners and
// references are looked up in the object's own namespace), and when n itself
// has no metadata.namespace (it lands in "default"). It returns "" or a
// clause starting with "; ".
func (g *Graph) elsewhere(n *Node, group, kind, name string) string {
	var found []string
	for _, c := range g.Nodes {
		if c.Name != name || c.Namespace == n.Namespace || !strings.EqualFold(c.Kind.Kind, kind) ||
			group != "" && !strings.EqualFold(c.Kind.Group, group) {
			continue
		}
		where := fmt.Sprintf("namespace %q (%s:%d)", c.Namespace, c.Object.File, c.Object.Line)
		if c.Namespace == manifest.DefaultNamespace && !hasNamespace(c.Object) {
			where = fmt.Sprintf("namespace %q: %s:%d has no metadata.namespace", c.Namespace, c.Object.File, c.Object.Line)
		}
		found = append(found, where)
	}
	var b strings.Builder
	if len(found) > 0 {
		sort.Strings(found)
		if len(found) > 3 {
			found = append(found[:3], fmt.Sprintf("%d more", len(found)-3))
		}
		fmt.Fprintf(&b, "; %s %q is declared in %s, and an owner or reference must be in the object's own namespace", kind, name, strings.Join(found, ", "))
	}
	if len(found) > 0 && n.Namespace == manifest.DefaultNamespace && !hasNamespace(n.Object) {
		b.WriteString("; this object has no metadata.namespace, so it is in \"default\"")
	}
	return b.String()
}

func hasNamespace(o manifest.Object) bool {
	ns, _ := o.Metadata()["namespace"].(string)
	return ns != ""
}

// findLoose finds a node by group (any CRD version) and kind case-insensitively.
func (g *Graph) findLoose(ns, group, kind, name string) *Node {
	for _, c := range g.Nodes {
		if c.Namespace == ns && c.Name == name && strings.EqualFold(c.Kind.Group, group) && strings.EqualFold(c.Kind.Kind, kind) {
			return c
		}
	}
	return nil
}

func shortErr(err error) string {
	if de, ok := err.(*diag.Error); ok {
		return de.Msg
	}
	return err.Error()
}

// edges records what each node waits for: its owner, the resources it
// references by name, and the resources producing the config maps and secrets
// it reads. Missing inputs are errors naming the field.
func (g *Graph) edges(n *Node) diag.List {
	var errs diag.List
	set := map[string]bool{}
	add := func(k string) {
		if k != n.Key() {
			set[k] = true
		}
	}
	if n.owner != nil {
		add(n.owner.Key())
	}
	// Owners and references given by ARM ID that another manifest of the
	// snapshot declares (in any namespace) are waited for too: ASO does not,
	// and retries until ARM has the parent; gitaso orders them instead.
	if n.owner == nil && n.ownerARM != "" {
		if o := g.byARMID.get(n.ownerARM); o != nil && o != n {
			n.ownerByID = o
			add(o.Key())
		} else if a := g.declaredAncestor(n, n.ownerARM); a != nil {
			// An owner under a declared resource (a Table owned by
			// .../tableServices/default of a declared StorageAccount).
			add(a.Key())
		}
	}
	for _, d := range n.Deps {
		switch d.Type {
		case aso.DepReference:
			if d.ARMID != "" {
				if t := g.byARMID.get(d.ARMID); t != nil {
					add(t.Key())
				} else if a := g.declaredAncestor(n, d.ARMID); a != nil {
					add(a.Key())
				}
				if d.Name != "" {
					errs = append(errs, objErr(n.Object, d.Field, "a reference sets both armId and name; set one"))
				}
				continue
			}
			if d.Name == "" || d.Kind == "" {
				continue // reported by aso.Dependencies and aso.Validate
			}
			t := g.byKey[Key(n.Namespace, d.Group, d.Kind, d.Name)]
			if t == nil {
				t = g.findLoose(n.Namespace, d.Group, d.Kind, d.Name)
			}
			if t == nil {
				errs = append(errs, objErr(n.Object, d.Field, "referenced %s %q (%s) not found in namespace %q%s", d.Kind, d.Name, d.Group, n.Namespace, g.elsewhere(n, d.Group, d.Kind, d.Name)))
				continue
			}
			add(t.Key())
		case aso.DepConfigMap, aso.DepSecret, aso.DepSecretMap:
			secret := d.Type != aso.DepConfigMap
			if secret && g.inputs.hasSecret(n.Namespace, d.Name) || !secret && g.inputs.hasConfigMap(n.Namespace, d.Name) {
				if d.Type != aso.DepSecretMap && !g.inputs.hasKey(n.Namespace, secret, d.Name, d.Key) {
					errs = append(errs, objErr(n.Object, d.Field, "%s %s has no key %q", kindWord(secret), d.Name, d.Key))
				}
				continue
			}
			if p := g.inputs.producer(n.Namespace, secret, d.Name, d.Key); p != nil {
				add(p.Key())
				continue
			}
			if keys := g.inputs.exportedKeys(n.Namespace, secret, d.Name); len(keys) > 0 {
				errs = append(errs, objErr(n.Object, d.Field, "%s %s has no key %q: it is exported with keys %s", kindWord(secret), d.Name, d.Key, strings.Join(keys, ", ")))
				continue
			}
			errs = append(errs, objErr(n.Object, d.Field, "%s %s (key %q) not found in namespace %q: declare it or export it from a resource's operatorSpec", kindWord(secret), d.Name, d.Key, n.Namespace))
		}
	}
	n.DependsOn = n.DependsOn[:0]
	for k := range set {
		n.DependsOn = append(n.DependsOn, k)
	}
	sort.Strings(n.DependsOn)
	return errs
}

// declaredAncestor returns the node declaring the nearest ancestor of ARM ID
// id, other than n itself or a resource inside n (which would be a cycle of
// n's own making), or nil.
func (g *Graph) declaredAncestor(n *Node, id string) *Node {
	lower := strings.ToLower(id)
	self := strings.ToLower(n.ARMID)
	for i := len(lower) - 1; i > 0; i-- {
		if lower[i] != '/' {
			continue
		}
		a := g.byARMID.get(lower[:i])
		if a == nil {
			continue
		}
		if a == n || self != "" && strings.HasPrefix(lower[:i]+"/", self+"/") {
			return nil
		}
		return a
	}
	return nil
}

// topoSort orders the nodes so that dependencies come first, breaking ties by
// key, and reports the first cycle (the same on every run).
func topoSort(g *Graph) ([]*Node, error) {
	keys := make([]string, 0, len(g.byKey))
	for k := range g.byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	const (
		white = iota
		grey
		black
	)
	color := make(map[string]int, len(keys))
	out := make([]*Node, 0, len(keys))
	var stack []string
	var visit func(k string) error
	visit = func(k string) error {
		switch color[k] {
		case black:
			return nil
		case grey:
			// cycle: from k's position in the stack to the end
			i := len(stack) - 1
			for i >= 0 && stack[i] != k {
				i--
			}
			cyc := append(append([]string(nil), stack[i:]...), k)
			ids := make([]string, len(cyc))
			for j, c := range cyc {
				ids[j] = g.byKey[c].ID()
			}
			n := g.byKey[k]
			return diag.List{objErr(n.Object, "", "dependency cycle: %s", strings.Join(ids, " -> "))}
		}
		color[k] = grey
		stack = append(stack, k)
		for _, d := range g.byKey[k].DependsOn {
			if err := visit(d); err != nil {
				return err
			}
		}
		stack = stack[:len(stack)-1]
		color[k] = black
		out = append(out, g.byKey[k])
		return nil
	}
	for _, k := range keys {
		if err := visit(k); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// exportsOf reads operatorSpec destinations from a spec.
func exportsOf(spec map[string]any) []Export {
	op, _ := spec["operatorSpec"].(map[string]any)
	if op == nil {
		return nil
	}
	var out []Export
	for _, sec := range []bool{false, true} {
		field := "configMaps"
		if sec {
			field = "secrets"
		}
		if m, ok := op[field].(map[string]any); ok {
			names := make([]string, 0, len(m))
			for k := range m {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, name := range names {
				d, _ := m[name].(map[string]any)
				if d == nil {
					continue
				}
				dn, _ := d["name"].(string)
				dk, _ := d["key"].(string)
				if dn != "" && dk != "" {
					out = append(out, Export{Secret: sec, Source: name, Name: dn, Key: dk})
				}
			}
		}
		exprField := "configMapExpressions"
		if sec {
			exprField = "secretExpressions"
		}
		if l, ok := op[exprField].([]any); ok {
			for _, it := range l {
				d, _ := it.(map[string]any)
				if d == nil {
					continue
				}
				dn, _ := d["name"].(string)
				dk, _ := d["key"].(string)
				v, _ := d["value"].(string)
				if dn != "" {
					out = append(out, Export{Secret: sec, Source: v, Expr: true, Name: dn, Key: dk})
				}
			}
		}
	}
	return out
}

// OwnerKey returns the key of the owner when the snapshot declares it (by
// name, or by an armId matching another manifest), "" otherwise.
func (n *Node) OwnerKey() string {
	switch {
	case n.owner != nil:
		return n.owner.Key()
	case n.ownerByID != nil:
		return n.ownerByID.Key()
	}
	return ""
}

// unitEdges makes every node of a unit wait for every node of the units it
// depends on (Options.UnitDependsOn).
func (g *Graph) unitEdges(deps map[string][]string) {
	if len(deps) == 0 {
		return
	}
	byUnit := map[string][]string{}
	units := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		units[i] = manifest.UnitOf(n.Object)
		if units[i] != "" {
			byUnit[units[i]] = append(byUnit[units[i]], n.Key())
		}
	}
	for i, n := range g.Nodes {
		ds := deps[units[i]]
		if len(ds) == 0 {
			continue
		}
		set := make(map[string]bool, len(n.DependsOn))
		for _, k := range n.DependsOn {
			set[k] = true
		}
		for _, d := range ds {
			for _, k := range byUnit[d] {
				if k != n.Key() && !set[k] {
					set[k] = true
					n.DependsOn = append(n.DependsOn, k)
				}
			}
		}
		sort.Strings(n.DependsOn)
	}
}

// servedElsewhere says that ASO removed the object's version (a v1alpha or
// v1beta one) and names the versions that serve the kind: the newest
// stable one first. (Which release removed it is the catalog's to say once
// it holds every release.)
func servedElsewhere(o manifest.Object, served []*aso.Kind) string {
	// The same Azure API version first (v1beta20210401 → v1api20210401):
	// its spec has the same fields; then the newest stable one.
	date := strings.TrimLeft(strings.TrimPrefix(strings.TrimPrefix(o.Version(), "v1beta"), "v1alpha1api"), "v")
	same := func(k *aso.Kind) int {
		switch {
		case date == "":
			return 2
		case k.Version == "v1api"+date:
			return 0
		case strings.HasSuffix(k.Version, date):
			return 1
		}
		return 2
	}
	sort.Slice(served, func(i, j int) bool {
		if si, sj := same(served[i]), same(served[j]); si != sj {
			return si < sj
		}
		pi, pj := strings.Contains(served[i].Version, "preview"), strings.Contains(served[j].Version, "preview")
		if pi != pj {
			return !pi
		}
		return served[i].Version > served[j].Version
	})
	var vs []string
	for i, k := range served {
		if i == 4 {
			vs = append(vs, fmt.Sprintf("%d more", len(served)-4))
			break
		}
		vs = append(vs, k.Group+"/"+k.Version)
	}
	what := "is a version ASO has removed (ASO replaced its v1alpha and v1beta versions)"
	prov := aso.CatalogProvenance()
	at := ""
	if len(prov.Commit) >= 12 {
		at = " (ASO at " + prov.Commit[:12] + ")"
	}
	return fmt.Sprintf("%s %s %s; the kind %s is served as %s%s: change apiVersion to %s",
		o.APIVersion(), o.Kind(), what, o.Kind(), strings.Join(vs, ", "), at, vs[0])
}
