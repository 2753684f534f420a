package planner

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/record"
)

// Action is what the executor does with one resource.
type Action int

// The actions, in the order a plan summary lists them.
const (
	NoOp Action = iota
	Create
	Adopt
	Update
	Drift
	Delete
	Detach
	Observe
	// Move: the resource's ARM ID left one manifest key and appears under
	// another (a namespace move, a rename keeping azureName). Its state is
	// carried over and the manifest is PUT again under the new key; nothing
	// is deleted.
	Move
)

var actionNames = [...]string{"no-op", "create", "adopt", "update", "drift", "delete", "detach", "observe", "move"}

// String returns the action's name as the JSON interface spells it.
func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// MarshalText implements encoding.TextMarshaler.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (a *Action) UnmarshalText(b []byte) error {
	for i, n := range actionNames {
		if n == string(b) {
			*a = Action(i)
			return nil
		}
	}
	return fmt.Errorf("unknown action %q", b)
}

// Writes reports whether the action sends a PUT.
func (a Action) Writes() bool {
	return a == Create || a == Adopt || a == Update || a == Drift || a == Move
}

// Actions lists every action in summary order.
var Actions = []Action{NoOp, Create, Adopt, Move, Update, Drift, Delete, Detach, Observe}

// Redacted replaces every secret value in a request body or change.
const Redacted = "(sensitive value)"

// KnownAfterApply marks a value that exists only once another resource has
// been applied.
const KnownAfterApply = aso.UnknownValue

// Annotations gitaso reads, as ASO names them.
const (
	AnnotationCredentialFrom = aso.AnnotationCredentialFrom
	// AnnotationDeleteUnmanaged ("true") lets gitaso delete a parent (a
	// resource group, a namespace, a server) even when ARM's cascade would
	// take resources gitaso does not manage with it.
	AnnotationDeleteUnmanaged = "gitaso.io/delete-unmanaged-children"
)

// Plan is the set of actions for one revision. Its JSON form is a stable,
// documented interface:
//
//	{"revision": "<sha>",
//	 "resources": [{"namespace", "kind", "name", "action", "armId",
//	                "request": {"method", "path", "body"}, "changes": [...]}, ...]}
//
// request.path carries ?api-version=; secret values in request.body and in
// changes are replaced by Redacted, or by "(sensitive value from Secret
// namespace/name)" for values substitution took from a Secret (resource
// "sensitive" lists those fields; their manifest shows the same). Resources are in apply order: creations and
// updates in dependency order, then deletions children first.
type Plan struct {
	Revision  string      `json:"revision"`
	Resources []*Resource `json:"resources"`
	// Held, when set, says why the plan's deletions wait for an explicit
	// approval (the deletion guard); nothing of a held plan is applied.
	Held *record.Hold `json:"held,omitempty"`
	// External are the sources outside the repository the revision's
	// objects came from (HelmRelease charts, with their versions).
	External []manifest.External `json:"external,omitempty"`
	// Deferred are the revision's objects that wait for a value one of its
	// resources exports once applied: "(known after apply)", planned and
	// applied in the same run once their producer is done.
	Deferred []*Deferred `json:"deferred,omitempty"`
	// Units are the revision's Flux Kustomizations and HelmReleases with
	// their state at this plan (none for a repository without Flux
	// objects). A unit whose Ready is False did not render or waits: its
	// objects are kept as last applied (planned as they were, never
	// deleted) and the plan is partial.
	Units []record.Unit `json:"units,omitempty"`
	// Beside, when set, says the plan was made beside ASO (gitaso plan
	// --beside-aso): its actions are what ASO would do once the revision
	// reaches the cluster, and gitaso applies none of them (BesideASO).
	Beside *Beside `json:"besideASO,omitempty"`
}

// FailedUnits returns the plan's units that did not render or wait.
func (p *Plan) FailedUnits() []record.Unit {
	var out []record.Unit
	for _, u := range p.Units {
		if u.Failing() {
			out = append(out, u)
		}
	}
	return out
}

// Partial reports whether units of the plan failed: the rest is planned.
func (p *Plan) Partial() bool { return len(p.FailedUnits()) > 0 }

// Origin is what rendered a resource: the Flux Kustomization that built it,
// the HelmRelease, chart and template it came from.
type Origin struct {
	Kustomization string `json:"kustomization,omitempty"` // namespace/name
	HelmRelease   string `json:"helmRelease,omitempty"`   // namespace/name
	Chart         string `json:"chart,omitempty"`         // name@version
	Template      string `json:"template,omitempty"`      // chart/templates/x.yaml
}

// Provenance annotations the renderers write on the objects they build.
const (
	AnnotationFluxKustomization = "gitaso.io/flux-kustomization"
	AnnotationHelmRelease       = "gitaso.io/helm-release"
	AnnotationHelmChart         = "gitaso.io/helm-chart"
	AnnotationHelmTemplate      = "gitaso.io/helm-template"
)

// originOf reads an object's provenance annotations; nil for plain YAML.
func originOf(ann map[string]string) *Origin {
	o := Origin{Kustomization: ann[AnnotationFluxKustomization], HelmRelease: ann[AnnotationHelmRelease],
		Chart: ann[AnnotationHelmChart], Template: ann[AnnotationHelmTemplate]}
	if o == (Origin{}) {
		return nil
	}
	return &o
}

// Unit returns the ID of the Flux unit that rendered the resource: its
// HelmRelease, else its Kustomization; "" for none.
func (o *Origin) Unit() string {
	if o == nil {
		return ""
	}
	return manifest.UnitOfAnnotations(map[string]string{AnnotationHelmRelease: o.HelmRelease, AnnotationFluxKustomization: o.Kustomization})
}

// String reads "HelmRelease team-a/infra, chart infra@1.1.0, template
// infra/templates/storage.yaml, Kustomization flux-system/apps".
func (o *Origin) String() string {
	if o == nil {
		return ""
	}
	var parts []string
	if o.HelmRelease != "" {
		parts = append(parts, "HelmRelease "+o.HelmRelease)
	}
	if o.Chart != "" {
		parts = append(parts, "chart "+o.Chart)
	}
	if o.Template != "" {
		parts = append(parts, "template "+o.Template)
	}
	if o.Kustomization != "" {
		parts = append(parts, "Kustomization "+o.Kustomization)
	}
	return strings.Join(parts, ", ")
}

// ShortRevision is a revision as plans show it: a commit's first 12 hex
// digits, followed by the external sources' digest when there is one.
func ShortRevision(rev string) string {
	if strings.HasPrefix(rev, "dir-") {
		return rev
	}
	commit, ext, hasExt := strings.Cut(rev, "+")
	if len(commit) > 12 {
		commit = commit[:12]
	}
	if hasExt {
		return commit + "+" + ext
	}
	return commit
}

// Resource is the plan for one ASO object.
type Resource struct {
	Namespace  string   `json:"namespace"`
	Group      string   `json:"group"`
	Version    string   `json:"version"`
	Kind       string   `json:"kind"`
	Name       string   `json:"name"`
	Action     Action   `json:"action"`
	Reason     string   `json:"reason,omitempty"`
	ARMID      string   `json:"armId"`
	APIVersion string   `json:"apiVersion"`
	Request    *Request `json:"request,omitempty"`
	Changes    []Change `json:"changes,omitempty"`
	// Warnings are what the plan says about the resource without
	// refusing it: a CRD version ASO removed, planned with the conversion
	// of the release that last had it (aso.Removed.Warning).
	Warnings []string `json:"warnings,omitempty"`

	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Origin says what rendered the resource when it is not plain YAML.
	Origin       *Origin             `json:"origin,omitempty"`
	AzureName    string              `json:"azureName,omitempty"`
	Policy       aso.ReconcilePolicy `json:"policy"`
	Credential   string              `json:"credential,omitempty"`
	Subscription string              `json:"subscriptionId,omitempty"`
	DependsOn    []string            `json:"dependsOn,omitempty"`
	// DeletedWith names the resource whose deletion removes this one through
	// ARM's cascade; no DELETE is sent for it.
	DeletedWith string `json:"deletedWith,omitempty"`
	// MovedFrom is the state key the resource's ARM ID leaves (action move).
	MovedFrom string `json:"movedFrom,omitempty"`
	// NoWrite marks an adoption without a write (action adopt, the state
	// rebuilt: Input.AdoptWithoutWrite): Azure already holds what the
	// manifest sets, so the executor reads it and records it as applied
	// instead of sending a PUT (it does send the PUT when its read finds
	// the object changed since the plan).
	NoWrite bool `json:"noWrite,omitempty"`
	// DeleteUnmanaged is the manifest's opt-in (annotation
	// gitaso.io/delete-unmanaged-children: "true") to delete it even when
	// ARM's cascade takes resources gitaso does not manage with it.
	DeleteUnmanaged bool `json:"deleteUnmanagedChildren,omitempty"`
	// KnownAfterApply lists JSON pointers of the body that are resolved by the
	// executor once the resources they come from have been applied.
	KnownAfterApply []string `json:"knownAfterApply,omitempty"`
	// Exports are the config map and secret keys this resource writes
	// (operatorSpec), as "configmap:<name>/<key>" or "secret:<name>/<key>".
	Exports []string `json:"exports,omitempty"`
	// ExportRules are the operatorSpec exports themselves (the value, or
	// the CEL expression, and where it goes), for the executor.
	ExportRules []Export `json:"exportRules,omitempty"`
	// Owner is the state key of the resource's owner when the plan declares
	// it (spec.owner by name, or by an armId under a declared resource).
	Owner string `json:"owner,omitempty"`
	// Manifest is the object as written in Git (after rendering), from
	// which the request is built again with the values the apply learns
	// (Resolve) and which CEL expressions read as self. Empty for
	// deletions. It holds no secret values: ASO specs refer to Secrets.
	Manifest map[string]any `json:"manifest,omitempty"`
	// Inputs are the values the request reads from outside the manifest.
	Inputs *Inputs `json:"inputs,omitempty"`
	// DeleteAfter are the state keys of the deletions that must finish
	// before this one (the resources that depended on it), recorded in
	// state when they were applied: deletions run in reverse dependency
	// order.
	DeleteAfter []string `json:"deleteAfter,omitempty"`

	// Sensitive are the fields of the request body that hold a value
	// substitution took from a Secret, JSON pointer → "Secret
	// namespace/name": the body shows manifest.SecretLabel there, and a
	// change of one is a sensitive change (see secrets.go).
	Sensitive map[string]string `json:"sensitive,omitempty"`
	// SecretSources are the Secrets ("Secret namespace/name") whose values
	// substitution placed in the manifest: Manifest and Inputs.ConfigMaps
	// show those values masked, so a resource read back from JSON cannot
	// be applied (Resolve: ErrMaskedSecrets).
	SecretSources []string `json:"secretSources,omitempty"`

	// ASO is the cluster's ASO object for the resource: in a plan beside
	// ASO the object of the same key, in a managing plan the object that
	// manages its ARM ID (ManagedByASO).
	ASO *ASOObject `json:"aso,omitempty"`
	// ManagedByASO says an ASO object of the cluster manages the
	// resource's ARM ID: gitaso refuses to write or delete it (the
	// executor fails it, reason ManagedByASO, naming the object).
	ManagedByASO bool `json:"managedByASO,omitempty"`

	// Hash is the sha256 of the full request (secrets included); empty while
	// values are known only after apply.
	Hash string `json:"-"`

	// secret keeps the real manifest and values beside the masked JSON
	// form; nil when substitution placed no value from a Secret.
	secret *secretSide

	// key is Key() when the plan built the resource from its node (shared
	// with the graph and the run's results); empty for one decoded from
	// JSON or written as a literal.
	key string
}

// Request is the ARM request the executor sends for a write.
type Request struct {
	Method string          `json:"method"`
	Path   string          `json:"path"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// Change is one field-level difference. Path is a JSON pointer into the ARM
// body. Before and After are absent for additions and removals respectively.
type Change struct {
	Path      string `json:"path"`
	Op        string `json:"op"` // add | replace | remove
	Before    any    `json:"before,omitempty"`
	After     any    `json:"after,omitempty"`
	Sensitive bool   `json:"sensitive,omitempty"`
	Unknown   bool   `json:"knownAfterApply,omitempty"`
}

// Key is the resource's identity in state: namespace/group/Kind/name.
func (r *Resource) Key() string {
	if r.key != "" {
		return r.key
	}
	return Key(r.Namespace, r.Group, r.Kind, r.Name)
}

// ID is the short form used in messages: namespace/Kind/name.
func (r *Resource) ID() string { return r.Namespace + "/" + r.Kind + "/" + r.Name }

// Key builds a state key.
func Key(namespace, group, kind, name string) string {
	return namespace + "/" + group + "/" + kind + "/" + name
}

// Summary counts resources per action.
func (p *Plan) Summary() map[Action]int {
	m := map[Action]int{}
	for _, r := range p.Resources {
		m[r.Action]++
	}
	return m
}

// HasChanges reports whether applying the plan would write to or delete from
// Azure (or forget a detached resource).
func (p *Plan) HasChanges() bool {
	if len(p.Deferred) > 0 {
		return true // they are created or updated once their values exist
	}
	for _, r := range p.Resources {
		if r.Action != NoOp && r.Action != Observe {
			return true
		}
	}
	return false
}

// Get returns the resource with the given key, or nil.
func (p *Plan) Get(key string) *Resource {
	for _, r := range p.Resources {
		if r.Key() == key {
			return r
		}
	}
	return nil
}

func depth(id string) int { return strings.Count(id, "/") }
