package planner

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// Deferred is an object of the revision that cannot be planned yet: a
// variable it uses comes from a ConfigMap or Secret that one of the
// revision's resources exports but has not written yet (its first apply is
// in this run), or it depends on such an object. It is "(known after
// apply)": planned and applied in the same run once its producer is done,
// and never deleted meanwhile.
type Deferred struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	File      string `json:"file,omitempty"`
	Line      int    `json:"line,omitempty"`
	// Vars are the variables the object itself waits for (empty when it
	// waits for another deferred object).
	Vars []string `json:"vars,omitempty"`
	// Reason says what it waits for, e.g. "${TEAM_A_CLIENT_ID} from config
	// map platform/team-a-vars, exported by
	// platform/UserAssignedIdentity/team-a-identity" or "waits for its owner
	// team-a/ResourceGroup/team-a-rg".
	Reason string `json:"reason"`
}

// Key is the object's identity in state (namespace/group/Kind/name).
func (d *Deferred) Key() string { return Key(d.Namespace, d.Group, d.Kind, d.Name) }

// ID is the short form used in messages: namespace/Kind/name.
func (d *Deferred) ID() string { return d.Namespace + "/" + d.Kind + "/" + d.Name }

// pendingNode is an ASO object holding a pending value, or one that
// depends on a deferred object.
type pendingNode struct {
	n    *Node
	vars []string
}

// checkPending checks the revision's pending substitution sources: each
// must be exported by one of its resources (else it is the error a missing
// source always was), and returns "ConfigMap ns/name, exported by X" for
// messages.
func checkPending(external []manifest.External, nodes []*Node) (sources []string, errs diag.List) {
	for _, e := range external {
		if !e.IsPending() {
			continue
		}
		ns, name, _ := strings.Cut(e.User, "/")
		var producer *Node
		secret := false
		for _, n := range nodes {
			if n.Namespace != ns {
				continue
			}
			for _, ex := range n.Exports {
				if ex.Name == name && (e.Kind == manifest.ExternalPending ||
					ex.Secret == (e.Kind == manifest.ExternalPendingSecret)) {
					producer, secret = n, ex.Secret
					break
				}
			}
			if producer != nil {
				break
			}
		}
		what := "ConfigMap or Secret"
		switch e.Kind {
		case manifest.ExternalPendingConfigMap:
			what = "ConfigMap"
		case manifest.ExternalPendingSecret:
			what = "Secret"
		}
		if producer == nil {
			errs = append(errs, &diag.Error{Object: e.User, Field: "substituteFrom", Msg: fmt.Sprintf(
				"substitute-from %s (read by %s): no %s %s in the repository, among the exports (operatorSpec) of its resources, or in the cluster; add ',optional' (Flux: optional: true) if it may be absent",
				e.User, e.URL, what, e.User)})
			continue
		}
		src := kindWord(secret) + " " + e.User + ", exported by " + producer.ID()
		if !slices.Contains(sources, src) {
			sources = append(sources, src)
		}
	}
	sort.Strings(sources)
	return sources, errs
}

// deferPending sets aside the nodes that hold pending values and every
// node that depends on one (owner, reference, a ConfigMap or Secret key it
// produces, its credential), with the inputs (ConfigMaps, Secrets) that
// hold pending values. It leaves g.Nodes and g.byKey with the rest.
func (g *Graph) deferPending(pending []pendingNode, pendingInputs map[string][]string, sources []string) {
	if len(pending) == 0 && len(pendingInputs) == 0 {
		return
	}
	from := "a ConfigMap or Secret not written yet"
	if len(sources) > 0 {
		from = strings.Join(sources, "; ")
	}
	vars := func(v []string) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = "${" + x + "}"
		}
		return strings.Join(s, ", ")
	}
	deferred := map[string]*Deferred{}
	// Producers of every export, deferred nodes included.
	producers := map[string]*Node{}
	add := func(n *Node) {
		for _, ex := range n.Exports {
			producers[exportKey(n.Namespace, ex.Secret, ex.Name, ex.Key)] = n
		}
	}
	for _, n := range g.Nodes {
		add(n)
	}
	for _, p := range pending {
		add(p.n)
		d := deferredOf(p.n)
		d.Vars = p.vars
		d.Reason = vars(p.vars) + " from " + from
		deferred[d.Key()] = d
	}
	inputReason := func(secret bool, ns, name string) (string, bool) {
		k := "configmap:" + ns + "/" + name
		if secret {
			k = "secret:" + ns + "/" + name
		}
		v, ok := pendingInputs[k]
		if !ok {
			return "", false
		}
		return kindWord(secret) + " " + ns + "/" + name + " (" + vars(v) + " from " + from + ")", true
	}
	waitsFor := func(n *Node) string {
		// The owner, by name.
		if ref, ok := aso.Owner(n.Spec); ok && ref.Name != "" && ref.ARMID == "" {
			group, kind := n.Kind.OwnerGroup, n.Kind.OwnerKind
			if n.Kind.ArbitraryOwner {
				group, kind = ref.Group, ref.Kind
			}
			if d := deferred[Key(n.Namespace, group, kind, ref.Name)]; d != nil {
				return "its owner " + d.ID()
			}
		}
		for _, dep := range n.Deps {
			switch dep.Type {
			case aso.DepReference:
				if dep.IsResource() {
					if d := deferred[Key(n.Namespace, dep.Group, dep.Kind, dep.Name)]; d != nil {
						return d.ID() + " (" + dep.Field + ")"
					}
				}
			case aso.DepConfigMap, aso.DepSecret, aso.DepSecretMap:
				secret := dep.Type != aso.DepConfigMap
				if r, ok := inputReason(secret, n.Namespace, dep.Name); ok {
					return r + " (" + dep.Field + ")"
				}
				if p := producers[exportKey(n.Namespace, secret, dep.Name, dep.Key)]; p != nil {
					if d := deferred[p.Key()]; d != nil {
						return kindWord(secret) + " " + dep.Name + " exported by " + d.ID() + " (" + dep.Field + ")"
					}
				}
			}
		}
		// Its credential (ASO's precedence: credential-from, then the
		// namespace's aso-credential).
		name := aso.NamespaceCredentialSecret
		if ann := n.Object.Annotations()[aso.AnnotationCredentialFrom]; ann != "" {
			name = ann
			if _, nm, ok := strings.Cut(ann, "/"); ok {
				name = nm
			}
		}
		if r, ok := inputReason(true, n.Namespace, name); ok {
			return "its credential " + r
		}
		return ""
	}
	for changed := true; changed; {
		changed = false
		for _, n := range g.Nodes {
			if deferred[n.Key()] != nil {
				continue
			}
			if why := waitsFor(n); why != "" {
				d := deferredOf(n)
				d.Reason = "waits for " + why
				deferred[n.Key()] = d
				changed = true
			}
		}
	}
	kept := g.Nodes[:0]
	for _, n := range g.Nodes {
		if deferred[n.Key()] != nil {
			delete(g.byKey, n.Key())
			continue
		}
		kept = append(kept, n)
	}
	g.Nodes = kept
	g.Deferred = make([]*Deferred, 0, len(deferred))
	for _, d := range deferred {
		g.Deferred = append(g.Deferred, d)
	}
	sort.Slice(g.Deferred, func(i, j int) bool { return g.Deferred[i].Key() < g.Deferred[j].Key() })
	g.deferredKeys = make(map[string]bool, len(deferred))
	for k := range deferred {
		g.deferredKeys[k] = true
	}
}

func deferredOf(n *Node) *Deferred {
	return &Deferred{Namespace: n.Namespace, Group: n.Kind.Group, Kind: n.Kind.Kind, Name: n.Name,
		File: n.Object.File, Line: n.Object.Line}
}
