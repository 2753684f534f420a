package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/record"
)

// Observed is what ARM holds now, keyed by lower-cased ARM ID. A resource
// that was read and not found maps to nil; a resource that was not read is
// absent from the map. A nil Observed means "no ARM reads" (offline plans and
// plans between refreshes).
type Observed map[string]json.RawMessage

// Input is everything Plan compares the graph with.
type Input struct {
	// Prior is what gitaso last applied, by state key.
	Prior map[string]record.Resource
	// Observed is the ARM state read for this plan, or nil.
	Observed Observed
	// Outputs are exported values known from earlier applies.
	Outputs Outputs
	// AdoptWithoutWrite is set, to why ("state rebuilt", "import"), while
	// the state carries the marker `gitaso state rebuild` or `gitaso state
	// import` writes: a resource to adopt whose Azure object already holds
	// every field its manifest sets is adopted without a PUT
	// (Resource.NoWrite). "" adopts with a PUT, as ASO does.
	AdoptWithoutWrite string
	// TrustSecretReferences, with AdoptWithoutWrite, takes the write-only
	// values a manifest reads from Secrets (SecretReference: an
	// administrator password), which Azure never returns, as what Azure
	// holds: set while taking over from ASO (gitaso import, handover),
	// which sent exactly them, read from the same Secrets. Otherwise such a
	// resource is adopted with a PUT.
	TrustSecretReferences bool
	// HeldUnits are the IDs of the units that did not render at this
	// revision (or wait for a dependency): a resource of the state whose
	// Unit is one of them is never planned for deletion for being absent
	// (the reconciler normally adds the unit's kept objects to the
	// snapshot; this holds when it has none).
	HeldUnits map[string]bool
}

// Plan decides an action for every resource of the graph and for every
// resource in state that is no longer in Git.
func (g *Graph) Plan(in Input) (*Plan, error) {
	p := &Plan{Revision: g.Revision, External: g.External, Resources: make([]*Resource, 0, len(g.Nodes))}
	moves, forget := g.moves(in.Prior)
	var errs diag.List
	planned, failed := g.planNodes(in, moves)
	for i, n := range g.Nodes {
		r, err := planned[i], failed[i]
		if err != nil {
			var de *diag.Error
			if errors.As(err, &de) {
				de.File, de.Line, de.Object = n.Object.File, n.Object.Line, n.ID()
				errs = append(errs, de)
			} else {
				errs = append(errs, &diag.Error{File: n.Object.File, Line: n.Object.Line, Object: n.ID(), Msg: "convert", Err: err})
			}
			continue
		}
		p.Resources = append(p.Resources, r)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	var dels []*Resource
	movedAway := map[string]bool{}
	for _, old := range moves {
		movedAway[old] = true
	}
	// A resource of a kind that has objects known after apply may be one of
	// them under another key (a move into a namespace whose credential is not
	// known yet): its deletion waits for them, in the run's next phase.
	deferredKinds := map[string]bool{}
	for _, d := range g.Deferred {
		deferredKinds[d.Group+"/"+d.Kind] = true
	}
	if len(g.Deferred) > 0 {
		p.Deferred = append([]*Deferred(nil), g.Deferred...)
	}
	for key, prior := range in.Prior {
		if g.byKey[key] != nil || movedAway[key] || g.deferredKeys[key] {
			continue
		}
		if u := priorUnit(prior); u != "" && in.HeldUnits[u] {
			// Its unit did not render: kept as last applied, never
			// deleted for being absent.
			continue
		}
		if deferredKinds[prior.Group+"/"+prior.Kind] {
			p.Deferred = append(p.Deferred, &Deferred{Namespace: prior.Namespace, Group: prior.Group, Kind: prior.Kind, Name: prior.Name,
				File: prior.File, Reason: "its deletion waits for the " + prior.Kind + " objects known after apply: one of them may declare its ARM ID"})
			continue
		}
		r := &Resource{
			Namespace: prior.Namespace, Group: prior.Group, Version: prior.Version, Kind: prior.Kind, Name: prior.Name,
			ARMID: prior.ARMID, APIVersion: prior.APIVersion, File: prior.File, Policy: aso.ReconcilePolicy(prior.Policy),
			Credential: prior.Credential, Action: Delete, Reason: "removed from Git", DeleteUnmanaged: prior.DeleteUnmanaged,
		}
		if r.Policy == "" {
			r.Policy = aso.ReconcilePolicyManage
		}
		switch {
		case forget[key] != nil:
			// Identity in Azure is the ARM ID: another manifest declares
			// this one, so deleting it would delete a declared resource.
			r.Action, r.Reason = Detach, "its ARM ID is declared by "+forget[key].ID()+": forgotten under this key, never deleted"
		case !r.Policy.AllowsDelete() && r.Policy.AllowsModify(): // detach-on-delete
			r.Action, r.Reason = Detach, "removed from Git; reconcile-policy detach-on-delete keeps it in Azure"
		case !r.Policy.AllowsDelete(): // skip
			r.Action, r.Reason = Detach, "removed from Git; reconcile-policy skip never deletes"
		default:
			r.Request = &Request{Method: "DELETE", Path: r.ARMID + "?api-version=" + r.APIVersion}
		}
		dels = append(dels, r)
	}
	sort.Slice(dels, func(i, j int) bool { return dels[i].Key() < dels[j].Key() })
	sort.Slice(p.Deferred, func(i, j int) bool { return p.Deferred[i].Key() < p.Deferred[j].Key() })
	markCascade(dels)
	// Kinds ARM offers no DELETE for (a storage account's blobServices, a
	// server's configurations, throughput settings): ASO refuses to delete
	// them and asks for detach-on-delete; gitaso forgets them, leaving them
	// in Azure, instead of sending a DELETE ARM rejects on every run.
	for _, r := range dels {
		if r.Action == Delete && r.DeletedWith == "" && !deletable(r) {
			r.Action, r.Request = Detach, nil
			r.Reason = "removed from Git; ARM offers no DELETE for a " + r.Kind + ": forgotten, left in Azure"
		}
	}
	orderDeletes(dels, in.Prior)
	p.Resources = append(p.Resources, dels...)
	return p, nil
}

// markCascade marks the deletions whose parent is deleted too (ARM
// cascades nested and extension resources): no DELETE of their own.
func markCascade(dels []*Resource) {
	// Children of a resource being deleted go with it (ARM cascades nested
	// and extension resources), unless the parent is only detached.
	// The parent is the deletion whose ARM ID is the shortest one above
	// (the first in key order among equals), found by cutting the ID at
	// each "/" rather than by comparing every pair.
	deleting := make(map[string]*Resource, len(dels))
	for _, q := range dels {
		if l := strings.ToLower(q.ARMID); q.Action == Delete && deleting[l] == nil {
			deleting[l] = q
		}
	}
	for _, r := range dels {
		if r.Action != Delete {
			continue
		}
		lower := strings.ToLower(r.ARMID)
		var best *Resource
		for k := 0; k < len(lower) && best == nil; k++ {
			if lower[k] == '/' {
				best = deleting[lower[:k]]
			}
		}
		if best != nil {
			r.DeletedWith = best.Key()
			r.Reason = "removed from Git; deleted by ARM with " + best.ID()
			r.Request = nil
		}
	}
}

// planNodes plans every node of the graph on all CPUs: the nodes read the
// graph and the input, never write them, and each goroutine writes its own
// slots. rs[i] and errs[i] are g.Nodes[i]'s.
func (g *Graph) planNodes(in Input, moves map[string]string) (rs []*Resource, errs []error) {
	rs, errs = make([]*Resource, len(g.Nodes)), make([]error, len(g.Nodes))
	var next atomic.Int64
	work := func() {
		for {
			i := int(next.Add(1) - 1)
			if i >= len(g.Nodes) {
				return
			}
			n := g.Nodes[i]
			rs[i], errs[i] = g.planNode(n, in, moves[n.Key()])
		}
	}
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(g.Nodes)/64+1) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return rs, errs
}

// deletable reports whether ARM offers a DELETE for the resource's kind (true
// when the catalog does not say).
func deletable(r *Resource) bool {
	k, ok := aso.Lookup(r.Group, r.Version, r.Kind)
	if !ok || len(k.Operations) == 0 {
		return true
	}
	for _, op := range k.Operations {
		if op == "DELETE" {
			return true
		}
	}
	return false
}

// moves finds the state entries no manifest key holds any more whose ARM ID a
// manifest of the graph declares under another key (a namespace move, a
// rename keeping azureName). moves maps the new key to the old one when the
// new key has no state of its own for that ARM ID; forget maps the other old
// keys to the node that declares their ARM ID (or one of its descendants:
// deleting them would take a declared resource with them).
func (g *Graph) moves(prior map[string]record.Resource) (moves map[string]string, forget map[string]*Node) {
	var gone []string
	for key, pr := range prior {
		if g.byKey[key] == nil && pr.ARMID != "" {
			gone = append(gone, key)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	sort.Strings(gone) // deterministic when two old keys claim one ARM ID
	// Every proper ancestor of a declared ARM ID, to the node declaring it.
	ancestors := map[string]*Node{}
	for _, n := range g.Nodes {
		id := strings.ToLower(n.ARMID)
		for i := len(id) - 1; i > 0; i-- {
			if id[i] == '/' {
				if _, ok := ancestors[id[:i]]; !ok {
					ancestors[id[:i]] = n
				}
			}
		}
	}
	moves, forget = map[string]string{}, map[string]*Node{}
	for _, key := range gone {
		pr := prior[key]
		id := strings.ToLower(pr.ARMID)
		n := g.byARMID.get(id)
		if n == nil {
			if a := ancestors[id]; a != nil {
				forget[key] = a
			}
			continue
		}
		own, hasOwn := prior[n.Key()]
		if _, taken := moves[n.Key()]; taken || (hasOwn && strings.EqualFold(own.ARMID, n.ARMID)) {
			forget[key] = n
			continue
		}
		moves[n.Key()] = key
	}
	return moves, forget
}

func (g *Graph) planNode(n *Node, in Input, movedFrom string) (*Resource, error) {
	r := &Resource{
		Namespace: n.Namespace, Group: n.Kind.Group, Version: n.Kind.Version, Kind: n.Kind.Kind, Name: n.Name,
		ARMID: n.ARMID, APIVersion: n.Kind.APIVersion, File: n.Object.File, Line: n.Object.Line,
		AzureName: n.AzureName, Policy: n.Policy, Credential: n.Credential, Subscription: n.Subscription,
		DependsOn: n.DependsOn, DeleteUnmanaged: n.Object.Annotations()[AnnotationDeleteUnmanaged] == "true",
		key: n.Key(),
	}
	if rm := n.Kind.Removed; rm != nil {
		r.Warnings = append(r.Warnings, rm.Warning())
	}
	for _, ex := range n.Exports {
		r.Exports = append(r.Exports, fmt.Sprintf("%s:%s/%s", map[bool]string{false: "configmap", true: "secret"}[ex.Secret], ex.Name, ex.Key))
	}
	r.ExportRules = n.Exports
	r.Owner = n.OwnerKey()
	r.Origin = originOf(n.Object.Annotations())
	// The plan shares the graph's object rather than a copy of it: neither
	// the planner, the executor nor aso's hooks write into a manifest.
	r.Manifest = n.Object.Content
	rec := &recorder{resolver: &resolver{g: g, n: n, outputs: in.Outputs}}
	body, err := aso.Convert(n.Kind, n.Spec, n.AzureName, rec)
	secrets := appendSecretValues(n.Object.Secrets, rec.secrets...)
	if err != nil {
		return nil, scrubSecrets(err, secrets)
	}
	r.Inputs = rec.inputs()
	r.setSecrets(secrets)
	if r.Sensitive, err = markSecrets(body, secrets); err != nil {
		return nil, err
	}
	path := n.ARMID + "?api-version=" + n.Kind.APIVersion
	red, err := redactLabeled(body.JSON, body.Secrets, r.Sensitive)
	if err != nil {
		return nil, fmt.Errorf("redact body: %w", err)
	}
	r.KnownAfterApply = body.Unknown
	if len(body.Unknown) == 0 {
		r.Hash = hashRequest(path, body.JSON)
	}
	prior, hasPrior := in.Prior[n.Key()]
	if movedFrom != "" {
		// The state of the key the ARM ID leaves is this resource's.
		prior, hasPrior = in.Prior[movedFrom]
	}
	var observed json.RawMessage
	observedRead := false
	if in.Observed != nil {
		observed, observedRead = in.Observed[strings.ToLower(n.ARMID)]
	}

	// Fields ASO's payload hooks rewrite (a vault's createMode) show what
	// ARM will receive, or known after apply where only the apply can tell;
	// the hash stays on the converted body, which the executor hashes too.
	planned, err := aso.PlanPayload(n.Kind.Group, n.Kind.Kind, red, observedRead && observed != nil)
	if err != nil {
		return nil, scrubSecrets(err, secrets)
	}
	red = planned.JSON
	body.Unknown = append(body.Unknown[:len(body.Unknown):len(body.Unknown)], planned.Unknown...)
	r.KnownAfterApply = body.Unknown

	if !n.Policy.AllowsModify() { // skip: read only
		r.Action = Observe
		r.Reason = "reconcile-policy skip: read only"
		if observedRead && observed == nil {
			r.Reason = "reconcile-policy skip: not found in Azure (AzureResourceNotFound)"
		}
		return r, nil
	}
	r.Request = &Request{Method: "PUT", Path: path, Body: red}

	skip := map[string]bool{}
	for _, s := range body.Secrets {
		skip[s] = true
	}
	for _, s := range body.Unknown {
		skip[s] = true
	}
	for _, s := range planned.Instructions {
		skip[s] = true // ARM takes it as an instruction and does not report it back
	}
	// The body decoded, for the diffs: most resources are unchanged and
	// need none, so it is decoded when a diff asks for it.
	if !json.Valid(red) {
		_, err := decode(red)
		return nil, fmt.Errorf("decode body: %w", err)
	}
	var desired any
	desiredDoc := func() any {
		if desired == nil {
			desired, _ = decode(red) // valid JSON: checked above
		}
		return desired
	}

	// While the state adopts what Azure holds (Input.AdoptWithoutWrite: an
	// import, a rebuild), a resource whose last run did not succeed with the
	// same request (refused or skipped before anything was sent, e.g. a run
	// while ASO managed it) is adopted without a write when Azure holds what
	// its manifest sets, rather than sent again.
	retryAdopted := false
	if in.AdoptWithoutWrite != "" && hasPrior && strings.EqualFold(prior.ARMID, n.ARMID) && observedRead && observed != nil &&
		r.Hash != "" && r.Hash == prior.AppliedHash && prior.APIVersion == n.Kind.APIVersion && !isReady(prior) {
		od, err := decode(observed)
		var adoptDiff []Change
		if err == nil {
			diffSubset(od, desiredDoc(), "", skip, &adoptDiff)
			sensitiveDrift(od, body.JSON, r.Sensitive, &adoptDiff)
		}
		saved := r.Changes
		r.Changes = adoptDiff
		if retryAdopted = noWriteBlocker(od, err, r, body, in.TrustSecretReferences) == ""; !retryAdopted {
			r.Changes = saved
		}
	}

	switch {
	case retryAdopted:
		r.Action = Adopt
		r.adoptWithoutWrite(in.AdoptWithoutWrite, "")
	case !hasPrior || !strings.EqualFold(prior.ARMID, n.ARMID):
		switch {
		case observedRead && observed != nil:
			r.Action, r.Reason = Adopt, "not in gitaso's state yet; its manifest is PUT over it"
			od, err := decode(observed)
			if err == nil {
				diffSubset(od, desiredDoc(), "", skip, &r.Changes)
				sensitiveDrift(od, body.JSON, r.Sensitive, &r.Changes)
			}
			if in.AdoptWithoutWrite != "" {
				r.adoptWithoutWrite(in.AdoptWithoutWrite, noWriteBlocker(od, err, r, body, in.TrustSecretReferences))
			}
		default:
			r.Action, r.Reason = Create, ""
			if hasPrior {
				r.Reason = fmt.Sprintf("ARM ID changed from %s (ASO treats azureName and owner as immutable; the old resource is left in Azure)", prior.ARMID)
			}
		}
	case observedRead && observed == nil:
		r.Action, r.Reason = Create, "deleted outside gitaso: re-created"
	case r.Hash == "" || r.Hash != prior.AppliedHash || prior.APIVersion != n.Kind.APIVersion || !isReady(prior) && !refusedForASO(prior):
		r.Action = Update
		if len(prior.AppliedBody) > 0 {
			if before, err := decode(prior.AppliedBody); err == nil {
				diffFull(before, desiredDoc(), "", &r.Changes)
			}
		}
		var hashes map[string]string // of the fields from Secrets, when prior has them
		if prior.SecretHashes != nil && len(r.Sensitive) > 0 {
			hashes = SecretHashes(body.JSON, r.Sensitive)
		}
		for _, s := range body.Secrets {
			if _, fromSecret := r.Sensitive[s]; fromSecret && hashes != nil && hashes[s] == prior.SecretHashes[s] {
				continue // the same value as applied
			}
			if r.Hash != prior.AppliedHash && !hasChangeAt(r.Changes, s) {
				r.Changes = append(r.Changes, Change{Path: s, Op: "replace", Sensitive: true})
			}
		}
		switch {
		case prior.APIVersion != n.Kind.APIVersion:
			r.Reason = fmt.Sprintf("api-version %s -> %s", prior.APIVersion, n.Kind.APIVersion)
		case !isReady(prior) && r.Hash == prior.AppliedHash:
			r.Reason = "last apply did not succeed: retry"
		}
	case exportsChanged(n.Exports, prior):
		// ASO writes a resource's exports on every reconcile; gitaso writes
		// them when it applies: an added or removed operatorSpec export is
		// an update (the values are read from ARM's answer to the PUT).
		r.Action, r.Reason = Update, "operatorSpec exports changed: written again"
	default:
		r.Action = NoOp
		if observedRead {
			od, err := decode(observed)
			if err == nil {
				diffSubset(od, desiredDoc(), "", skip, &r.Changes)
				sensitiveDrift(od, body.JSON, r.Sensitive, &r.Changes)
			}
			if len(r.Changes) > 0 {
				r.Action, r.Reason = Drift, "changed in Azure outside gitaso: corrected"
			}
		}
	}
	for i := range r.Changes {
		c := &r.Changes[i]
		for _, u := range body.Unknown {
			if c.Path == u || strings.HasPrefix(u, c.Path+"/") {
				c.Unknown = true
			}
		}
		for _, s := range body.Secrets {
			if c.Path == s {
				c.Sensitive, c.Before, c.After = true, nil, nil
			}
		}
	}
	if movedFrom != "" {
		r.MovedFrom = movedFrom
		from := prior.Namespace + "/" + prior.Kind + "/" + prior.Name
		if r.Action == Create {
			r.Reason = "moved from " + from + "; " + r.Reason
		} else {
			// A PUT of the manifest under its new key (ASO adopts a
			// re-created object the same way); exports are written anew
			// for the new namespace and name.
			changed := r.Action == Update || r.Action == Drift
			r.Action = Move
			r.Reason = "from " + from + ", same ARM ID: state carried over, nothing deleted"
			if changed {
				r.Reason += "; the manifest or Azure differs too"
			}
		}
		if k := n.kept; k != nil && k.from == movedFrom {
			r.Reason = "moved from " + from + ", keeps its name " + k.name + " because Azure allows one assignment of a role to a principal at a scope: " +
				"under the name ASO would give it (" + k.defaults + ") it could only be created once the old one was deleted, and the principal would be without the access in between"
			if r.Action == Create {
				r.Reason += "; " + "not found in Azure: created"
			}
		}
	} else if k := n.kept; k != nil && r.Action != NoOp {
		r.Reason = strings.TrimPrefix(r.Reason+"; ", "; ") + "keeps its name " + k.name + " from gitaso's state (ASO keeps the azureName it gave it; its default now would be " + k.defaults + ")"
	}
	if r.Action == NoOp {
		r.Request = nil
	}
	return r, nil
}

// ReasonAdoptNoWrite is the reason of an adoption without a write, why
// being Input.AdoptWithoutWrite.
func ReasonAdoptNoWrite(why string) string {
	return "without a write (" + why + "): Azure holds every field the manifest sets; recorded as applied"
}

// adoptWithoutWrite makes r an adoption without a write when nothing blocks
// it (blocker ""), or says why its manifest is PUT.
func (r *Resource) adoptWithoutWrite(why, blocker string) {
	if blocker != "" {
		r.Reason = why + ", but " + blocker + ": its manifest is PUT over it"
		return
	}
	r.NoWrite, r.Reason, r.Request = true, ReasonAdoptNoWrite(why), nil
}

// noWriteBlocker says why a resource to adopt cannot be recorded without a
// write: Azure's object differs from the manifest (the adopt diff, in
// r.Changes), could not be decoded (err), is not provisioned, or the
// manifest sets write-only secret values ARM does not return. "" when
// nothing does. Values known after apply are compared by the executor, once
// it knows them.
func noWriteBlocker(observed any, err error, r *Resource, body *aso.Body, trustSecretRefs bool) string {
	switch {
	case err != nil:
		return "Azure's object could not be read (" + err.Error() + ")"
	case len(r.Changes) == 1:
		return "Azure differs from the manifest in 1 field"
	case len(r.Changes) > 1:
		return fmt.Sprintf("Azure differs from the manifest in %d fields", len(r.Changes))
	}
	if st := provisioningStateOf(observed); st != "" && !strings.EqualFold(st, "Succeeded") {
		return "Azure's provisioningState is " + st
	}
	for _, s := range body.Secrets {
		if _, fromSecret := r.Sensitive[s]; !fromSecret && !trustSecretRefs {
			return "the manifest sets a write-only secret value Azure does not return (" + s + ")"
		}
	}
	return ""
}

// provisioningStateOf is properties.provisioningState of an ARM object, ""
// when it has none.
func provisioningStateOf(doc any) string {
	m, _ := doc.(map[string]any)
	props, _ := m["properties"].(map[string]any)
	st, _ := props["provisioningState"].(string)
	return st
}

// ProvisioningState is properties.provisioningState of an ARM object's
// JSON, "" when it has none or is not JSON.
func ProvisioningState(obj json.RawMessage) string {
	doc, err := decode(obj)
	if err != nil {
		return ""
	}
	return provisioningStateOf(doc)
}

// AdoptChanges compares the body gitaso would PUT for r (resolved: every
// value known) with what Azure holds, as the plan's adopt diff does: the
// fields the body sets that observed lacks or holds otherwise, secret values
// from Secrets masked, write-only values and ARM's instructions skipped.
func AdoptChanges(r *Resource, body *aso.Body, observed json.RawMessage) ([]Change, error) {
	od, err := decode(observed)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", r.ARMID, err)
	}
	red, err := redactLabeled(body.JSON, body.Secrets, r.Sensitive)
	if err != nil {
		return nil, fmt.Errorf("redact body: %w", err)
	}
	planned, err := aso.PlanPayload(r.Group, r.Kind, red, true)
	if err != nil {
		return nil, err
	}
	desired, err := decode(planned.JSON)
	if err != nil {
		return nil, fmt.Errorf("decode body: %w", err)
	}
	skip := map[string]bool{}
	for _, l := range [][]string{body.Secrets, body.Unknown, planned.Unknown, planned.Instructions} {
		for _, s := range l {
			skip[s] = true
		}
	}
	var cs []Change
	diffSubset(od, desired, "", skip, &cs)
	sensitiveDrift(od, body.JSON, r.Sensitive, &cs)
	return cs, nil
}

func isReady(r record.Resource) bool { return r.Ready.Status == "True" }

// ReasonManagedByASO is the Ready reason of a resource gitaso refused to
// write or delete because an ASO object in the cluster manages it.
const ReasonManagedByASO = "ManagedByASO"

// refusedForASO reports whether prior's last run refused it because ASO
// manages it: gitaso sent nothing, so what it applied before (an import's
// adoption) still stands and is no failed apply to retry.
func refusedForASO(r record.Resource) bool { return r.Ready.Reason == ReasonManagedByASO }

// exportsChanged reports whether the export rules declare other config map
// or secret keys than the ones prior holds ("name/key"; an expression
// returning a map covers every key of its name).
func exportsChanged(rules []Export, prior record.Resource) bool {
	have := map[string]bool{}
	for k := range prior.Outputs {
		have["c:"+k] = true
	}
	for _, k := range prior.SecretOutputs {
		have["s:"+k] = true
	}
	kind := func(secret bool) string {
		if secret {
			return "s:"
		}
		return "c:"
	}
	covered := map[string]bool{}
	for _, ex := range rules {
		if ex.Key != "" {
			k := kind(ex.Secret) + ex.Name + "/" + ex.Key
			if !have[k] {
				return true
			}
			covered[k] = true
			continue
		}
		prefix := kind(ex.Secret) + ex.Name + "/"
		found := false
		for k := range have {
			if strings.HasPrefix(k, prefix) {
				covered[k], found = true, true
			}
		}
		if !found {
			return true
		}
	}
	return len(covered) != len(have)
}

func hasChangeAt(cs []Change, p string) bool {
	for _, c := range cs {
		if c.Path == p {
			return true
		}
	}
	return false
}

// hashRequest identifies a request exactly (secrets included) without
// keeping it.
func hashRequest(path string, body []byte) string {
	h := sha256.New()
	h.Write(appendLower(make([]byte, 0, 256), path))
	h.Write([]byte{0})
	h.Write(body)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// appendLower appends strings.ToLower(s) to b, without a copy of s for
// ASCII text.
func appendLower(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return append(b, strings.ToLower(s)...)
		}
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return b
}

// HashRequest is the hash stored as record.Resource.AppliedHash.
func HashRequest(path string, body []byte) string { return hashRequest(path, body) }

// Redact returns body with the given JSON pointers replaced by Redacted.
func Redact(body []byte, secrets []string) (json.RawMessage, error) { return redact(body, secrets) }

// Keys returns the state keys of the plan's resources, sorted.
func (p *Plan) Keys() []string {
	ks := make([]string, len(p.Resources))
	for i, r := range p.Resources {
		ks[i] = r.Key()
	}
	sort.Strings(ks)
	return ks
}

// priorUnit is the unit of a resource of the state: its Unit, or for a
// record written before units were recorded, the unit its Origin names
// ("HelmRelease ns/name, chart …, Kustomization ns/name").
func priorUnit(r record.Resource) string {
	if r.Unit != "" || r.Origin == "" {
		return r.Unit
	}
	var o Origin
	for _, part := range strings.Split(r.Origin, ", ") {
		switch k, v, _ := strings.Cut(part, " "); k {
		case "HelmRelease":
			o.HelmRelease = v
		case "Kustomization":
			o.Kustomization = v
		}
	}
	return o.Unit()
}
