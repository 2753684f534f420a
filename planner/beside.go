package planner

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/record"
)

// ASOObject is what a cluster's ASO object says of its resource, as the
// cluster adapter read it: the planner never reads a cluster, it is given
// these values.
type ASOObject struct {
	Namespace string `json:"namespace"`
	Group     string `json:"group"`
	Version   string `json:"version,omitempty"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	// ARMID is the object's status.id: "" until ASO created or adopted it.
	ARMID string `json:"armId,omitempty"`
	// APIVersion is the ARM api-version of the object's kind (for the
	// DELETE ASO would send).
	APIVersion string `json:"-"`
	// Policy is the object's reconcile policy (manage when it has none);
	// PolicySet says the object carries the annotation.
	Policy    aso.ReconcilePolicy `json:"policy"`
	PolicySet bool                `json:"-"`
	// Ready is the object's Ready condition; Status "" when ASO has set none.
	Ready record.Condition `json:"ready"`
	// Generation is the object's metadata.generation: Ready describes it
	// when Ready.ObservedGeneration equals it.
	Generation int64 `json:"generation,omitempty"`
}

// Key returns the object's key, as a plan resource's ("namespace/group/Kind/name").
func (o *ASOObject) Key() string { return Key(o.Namespace, o.Group, o.Kind, o.Name) }

// ID returns "namespace/Kind/name".
func (o *ASOObject) ID() string { return o.Namespace + "/" + o.Kind + "/" + o.Name }

// manages reports whether ASO writes the object's resource (manage or
// detach-on-delete).
func (o *ASOObject) manages() bool { return o.Policy.AllowsModify() }

// Beside says a plan was made beside ASO: gitaso manages nothing of it, the
// actions are what ASO would do once the revision reaches the cluster.
type Beside struct {
	// Cluster says whether the cluster's ASO objects were read: false plans
	// against Azure alone (no cluster configured or reachable; Error says why).
	Cluster bool `json:"cluster"`
	// Objects is how many ASO objects the cluster holds in the plan's scope.
	Objects int    `json:"objects"`
	Error   string `json:"error,omitempty"`
}

// BesideASO turns a plan made with no gitaso state against live Azure (the
// repository is ASO's: gitaso applied none of it) into what ASO would do
// once the revision is applied to the cluster, given the cluster's ASO
// objects in the plan's scope (nil when no cluster was read; clusterErr
// says why when one could not be):
//
//   - a resource whose object ASO already manages and Azure holds as the
//     manifest says is a no-op, one that differs an update (ASO PUTs the
//     changes), one missing from Azure a create (ASO re-creates it);
//   - a resource with no object in the cluster is a create, or an adopt when
//     Azure has it (ASO PUTs over it);
//   - reconcile-policy skip, on the manifest or on the object when the
//     manifest sets none (Flux's apply keeps a field it does not set), is
//     observe: ASO only reads;
//   - an object of the cluster the revision no longer has is a delete (ASO
//     deletes the resource once Flux prunes the object), or a detach under
//     detach-on-delete or skip, or when ASO never created it.
//
// Every resource with an object carries its ASO view (Resource.ASO).
func BesideASO(p *Plan, objs []ASOObject, clusterErr error) {
	b := &Beside{Cluster: objs != nil && clusterErr == nil, Objects: len(objs)}
	if clusterErr != nil {
		b.Error = clusterErr.Error()
	}
	p.Beside = b
	byKey := make(map[string]*ASOObject, len(objs))
	for i := range objs {
		byKey[objs[i].Key()] = &objs[i]
	}
	seen := map[string]bool{}
	for _, r := range p.Resources {
		o := byKey[r.Key()]
		seen[r.Key()] = true
		besideResource(r, o, b.Cluster)
	}
	for _, d := range p.Deferred {
		seen[d.Key()] = true // known after apply: still in the revision
	}
	var dels []*Resource
	for i := range objs {
		o := &objs[i]
		if seen[o.Key()] {
			continue
		}
		dels = append(dels, removedObject(o))
	}
	sort.Slice(dels, func(i, j int) bool { return dels[i].Key() < dels[j].Key() })
	markCascade(dels)
	p.Resources = append(p.Resources, dels...)
}

// besideResource sets r's action to ASO's for a resource of the revision.
func besideResource(r *Resource, o *ASOObject, cluster bool) {
	if o != nil {
		r.ASO = o
		if !manifestSetsPolicy(r) && o.PolicySet {
			r.Policy = o.Policy
		}
	}
	if r.Policy == aso.ReconcilePolicySkip && r.Action != Observe {
		r.Action, r.Request, r.Changes = Observe, nil, nil
		r.Reason = "reconcile-policy skip on the ASO object: ASO only reads it"
		return
	}
	managed := o != nil && o.ARMID != "" && strings.EqualFold(o.ARMID, r.ARMID)
	switch r.Action {
	case Adopt:
		switch {
		case managed && len(r.Changes) == 0:
			r.Action, r.Reason = NoOp, "ASO manages it; Azure holds what the manifest sets"
		case managed:
			r.Action, r.Reason = Update, "ASO would PUT the changes"
		case o != nil && o.ARMID != "":
			r.Reason = fmt.Sprintf("its ASO object's status.id is %s: ASO refuses a changed azureName or owner", o.ARMID)
		case cluster:
			r.Reason = "not in the cluster yet; exists in Azure: ASO would PUT over it"
		default:
			r.Reason = "exists in Azure: ASO would PUT over it"
		}
	case Create:
		switch {
		case managed:
			r.Reason = "its ASO object has it, Azure does not (deleted outside ASO): ASO would re-create it"
		case o != nil:
			r.Reason = "its ASO object has not created it yet"
		default:
			r.Reason = ""
		}
	}
}

// manifestSetsPolicy reports whether the resource's manifest sets
// reconcile-policy itself.
func manifestSetsPolicy(r *Resource) bool {
	meta, _ := r.Manifest["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	_, ok := ann[aso.AnnotationReconcilePolicy]
	return ok
}

// removedObject is what ASO would do with an object of the cluster that the
// revision no longer has.
func removedObject(o *ASOObject) *Resource {
	r := &Resource{
		Namespace: o.Namespace, Group: o.Group, Version: o.Version, Kind: o.Kind, Name: o.Name,
		ARMID: o.ARMID, APIVersion: o.APIVersion, Policy: o.Policy, ASO: o, Action: Delete,
		Reason: "removed from the repository: ASO deletes it once Flux prunes its object",
	}
	switch {
	case o.ARMID == "":
		r.Action, r.Reason = Detach, "removed from the repository; ASO never created it (no status.id): only the object goes"
	case o.Policy == aso.ReconcilePolicyDetachOnDelete:
		r.Action, r.Reason = Detach, "removed from the repository; reconcile-policy detach-on-delete: ASO leaves it in Azure"
	case !o.Policy.AllowsDelete():
		r.Action, r.Reason = Detach, "removed from the repository; reconcile-policy skip: ASO never deletes it"
	default:
		r.Request = &Request{Method: "DELETE", Path: r.ARMID + "?api-version=" + r.APIVersion}
	}
	return r
}

// RefuseASOManaged marks the plan's resources whose ARM ID an ASO object of
// the cluster manages (reconcile-policy manage or detach-on-delete; an
// object with no status.id yet by its key): gitaso does not write nor delete
// them while ASO does (Resource.ManagedByASO; the executor fails them with
// reason ManagedByASO, naming the object). Resources gitaso only reads or
// forgets (observe, detach) are left alone. It returns how many it marked.
func RefuseASOManaged(p *Plan, objs []ASOObject) int {
	byID := map[string]*ASOObject{}
	byKey := map[string]*ASOObject{}
	for i := range objs {
		o := &objs[i]
		if !o.manages() {
			continue
		}
		if o.ARMID != "" {
			byID[strings.ToLower(o.ARMID)] = o
		} else {
			byKey[o.Key()] = o
		}
	}
	n := 0
	for _, r := range p.Resources {
		if r.Action == Observe || r.Action == Detach {
			continue
		}
		o := byID[strings.ToLower(r.ARMID)]
		if o == nil {
			o = byKey[r.Key()]
		}
		if o == nil {
			continue
		}
		r.ASO, r.ManagedByASO = o, true
		n++
	}
	return n
}

// ManagedByASOMessage says why gitaso refuses a resource ASO manages.
func (r *Resource) ManagedByASOMessage() string {
	if r.ASO == nil {
		return ""
	}
	return fmt.Sprintf("ASO object %s/%s/%s in the cluster manages %s (reconcile-policy %s): gitaso does not write it while ASO does; hand it over by setting reconcile-policy skip on that object (docs/migration.md)",
		r.ASO.Namespace, r.ASO.Kind, r.ASO.Name, r.ARMID, r.ASO.Policy)
}

// asoLine is the ASO view of a resource as the text plan shows it.
func asoLine(o *ASOObject) string {
	ready := "no Ready condition"
	if o.Ready.Status != "" {
		ready = "Ready " + o.Ready.Status
		if o.Ready.Reason != "" {
			ready += " (" + o.Ready.Reason + ")"
		}
		if o.Generation != 0 && o.Ready.ObservedGeneration != 0 && o.Ready.ObservedGeneration < o.Generation {
			ready += fmt.Sprintf(", of generation %d of %d", o.Ready.ObservedGeneration, o.Generation)
		}
	}
	return fmt.Sprintf("%s, policy %s, %s", o.ID(), o.Policy, ready)
}

// refusedASO counts the resources refused because ASO manages them.
func (p *Plan) refusedASO() int {
	n := 0
	for _, r := range p.Resources {
		if r.ManagedByASO {
			n++
		}
	}
	return n
}
