package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// ARM api-versions of the harness's own reads.
const (
	apiResources = "2021-04-01"
	apiAuthz     = "2022-04-01"
	apiSB        = "2024-01-01"
)

// AzureResource is one resource the inventory found.
type AzureResource struct {
	ID   string
	Type string // as ARM spells it
	Name string
	Body map[string]any
}

// Fingerprint identifies one incarnation of a resource: it changes when the resource is deleted and created
// again under the same ID (creation time, and the principal of an identity).
func (r AzureResource) Fingerprint() string {
	return str(r.Body, "systemData", "createdAt") + "|" + str(r.Body, "properties", "createdOn") + "|" +
		str(r.Body, "properties", "principalId")
}

// Inventory lists what Azure holds for a fleet: every resource group whose name starts with prefix, the tracked
// resources in it, the queues of its Service Bus namespaces and the role assignments at or below it.
func Inventory(ctx context.Context, c *azure.Client, sub, prefix string) ([]AzureResource, error) {
	var out []AzureResource
	rgs, err := list(ctx, c, "/subscriptions/"+sub+"/resourcegroups", apiResources)
	if err != nil {
		return nil, err
	}
	for _, rg := range rgs {
		if !strings.HasPrefix(strings.ToLower(rg.Name), strings.ToLower(prefix)) {
			continue
		}
		out = append(out, rg)
		tracked, err := list(ctx, c, rg.ID+"/resources", apiResources)
		if err != nil {
			return nil, err
		}
		for _, r := range tracked {
			full, err := get(ctx, c, r.ID, apiFor(r.Type))
			if errors.Is(err, azure.ErrNotFound) {
				continue // deleted between the list and the read
			}
			if err != nil {
				return nil, err
			}
			out = append(out, full)
			if strings.EqualFold(r.Type, "Microsoft.ServiceBus/namespaces") {
				queues, err := list(ctx, c, r.ID+"/queues", apiSB)
				if err != nil && !errors.Is(err, azure.ErrNotFound) {
					return nil, err
				}
				out = append(out, queues...)
			}
		}
		ras, err := list(ctx, c, rg.ID+"/providers/Microsoft.Authorization/roleAssignments", apiAuthz)
		if err != nil && !errors.Is(err, azure.ErrNotFound) {
			return nil, err
		}
		// ARM lists the assignments that apply at the group: those above it
		// (the subscription's) too, which are not the group's.
		for _, ra := range ras {
			if strings.HasPrefix(strings.ToLower(ra.ID), strings.ToLower(rg.ID)+"/") {
				out = append(out, ra)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].ID) < strings.ToLower(out[j].ID) })
	return out, nil
}

func apiFor(armType string) string {
	switch strings.ToLower(armType) {
	case "microsoft.servicebus/namespaces":
		return apiSB
	case "microsoft.managedidentity/userassignedidentities":
		return "2023-01-31"
	}
	return apiResources
}

func list(ctx context.Context, c *azure.Client, path, apiVersion string) ([]AzureResource, error) {
	items, err := c.List(ctx, path, apiVersion)
	if err != nil {
		return nil, fmt.Errorf("reliability: list %s: %w", path, err)
	}
	out := make([]AzureResource, 0, len(items))
	for _, raw := range items {
		r, err := decodeResource(raw)
		if err != nil {
			return nil, fmt.Errorf("reliability: list %s: %w", path, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func get(ctx context.Context, c *azure.Client, id, apiVersion string) (AzureResource, error) {
	raw, err := c.Get(ctx, id, apiVersion)
	if err != nil {
		return AzureResource{}, err
	}
	return decodeResource(raw)
}

func decodeResource(raw []byte) (AzureResource, error) {
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return AzureResource{}, err
	}
	return AzureResource{ID: str(body, "id"), Type: str(body, "type"), Name: str(body, "name"), Body: body}, nil
}

// str reads a string at a path of a decoded JSON object ("" when absent); numbers and booleans are printed.
func str(m map[string]any, path ...string) string {
	var cur any = m
	for _, p := range path {
		o, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = o[p]
	}
	switch v := cur.(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		return fmt.Sprint(v)
	}
}

// StateView is what the harness reads from gitaso's state file.
type StateView struct {
	Resources  []record.Resource
	Operations []record.Operation
	LastRun    *record.Run
}

// ErrCorrupted is returned by ReadState when the state file does not open, fails bbolt's consistency check or
// holds a record that does not decode.
var ErrCorrupted = errors.New("state file corrupted")

// ReadState checks and reads a state file (which no process may hold open). A missing file is an empty state.
func ReadState(path string) (StateView, error) {
	var v StateView
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return v, nil
	}
	// gitaso's own check first: bbolt's tx.Check follows page numbers through its memory map and can kill the
	// process with a fault no recover() catches on a truncated file or a garbage page number.
	rep, err := state.Check(path)
	if err != nil {
		return v, fmt.Errorf("%w: check: %v", ErrCorrupted, err)
	}
	if !rep.OK() {
		return v, fmt.Errorf("%w: check: %d problems on pages %v", ErrCorrupted, rep.Total, rep.DamagedPages())
	}
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		return v, fmt.Errorf("%w: bbolt open: %v", ErrCorrupted, err)
	}
	var problems []string
	err = bdb.View(func(tx *bolt.Tx) error {
		for cerr := range tx.Check() {
			problems = append(problems, cerr.Error())
		}
		return nil
	})
	_ = bdb.Close()
	if err != nil || len(problems) > 0 {
		return v, fmt.Errorf("%w: bbolt check: %v %s", ErrCorrupted, err, strings.Join(problems, "; "))
	}
	db, err := state.Open(path, state.WithLockTimeout(5*time.Second))
	if err != nil {
		return v, fmt.Errorf("%w: %v", ErrCorrupted, err)
	}
	defer db.Close()
	if v.Resources, err = db.Resources(record.Filter{}); err != nil {
		return v, fmt.Errorf("%w: %v", ErrCorrupted, err)
	}
	if v.Operations, err = db.Operations(); err != nil {
		return v, fmt.Errorf("%w: %v", ErrCorrupted, err)
	}
	runs, err := db.Runs(1)
	if err != nil {
		return v, fmt.Errorf("%w: %v", ErrCorrupted, err)
	}
	if len(runs) > 0 {
		v.LastRun = &runs[0]
	}
	if _, err := db.Plan(); err != nil {
		return v, fmt.Errorf("%w: %v", ErrCorrupted, err)
	}
	if _, err := db.LastGoodRevision(); err != nil {
		return v, fmt.Errorf("%w: %v", ErrCorrupted, err)
	}
	return v, nil
}

// Expectation is what a fleet's Azure resources and state must look like after a scenario.
type Expectation struct {
	// Declared are the resources the revision under test declares.
	Declared []Decl
	// Baseline maps lower-cased ARM IDs to fingerprints before the run under test (nil for a create from empty).
	Baseline map[string]string
}

// Verdict is the outcome of the checks. Lists hold ARM IDs (or state keys), sorted.
type Verdict struct {
	Missing    []string // declared, not in Azure
	NotReady   []string // declared, Ready is not True in state (or no record)
	Stale      []string // declared, a field the manifest sets differs in Azure ("id field: got, want")
	Undeleted  []string // in Azure, not declared, still in state
	Orphaned   []string // in Azure, not declared, forgotten by state
	Duplicated []string // one manifest, more than one Azure resource ("id: a, b")
	Lost       []string // declared before and after, deleted from Azure or re-created in between
	Leftover   []string // state records of resources the revision does not declare (and Azure does not hold)
	InFlight   int      // in-flight operations recorded in state
	Corrupted  string   // why the state file is corrupted; "" when sound
}

// Converged reports whether Azure and state match the revision exactly.
func (v Verdict) Converged() bool {
	return len(v.Missing)+len(v.NotReady)+len(v.Stale)+len(v.Undeleted)+len(v.Orphaned)+len(v.Duplicated)+len(v.Leftover) == 0 &&
		v.InFlight == 0 && v.Corrupted == ""
}

// Findings is a one-line summary of what is wrong ("" when converged).
func (v Verdict) Findings() string {
	var parts []string
	add := func(name string, l []string) {
		if len(l) > 0 {
			parts = append(parts, fmt.Sprintf("%s %d (%s)", name, len(l), strings.Join(shorten(l, 3), "; ")))
		}
	}
	if v.Corrupted != "" {
		parts = append(parts, "corrupted: "+v.Corrupted)
	}
	add("lost", v.Lost)
	add("duplicated", v.Duplicated)
	add("orphaned", v.Orphaned)
	add("missing", v.Missing)
	add("not ready", v.NotReady)
	add("stale", v.Stale)
	add("undeleted", v.Undeleted)
	add("leftover in state", v.Leftover)
	if v.InFlight > 0 {
		parts = append(parts, fmt.Sprintf("in-flight operations %d", v.InFlight))
	}
	return strings.Join(parts, ", ")
}

func shorten(l []string, n int) []string {
	out := make([]string, 0, n+1)
	for i, s := range l {
		if i == n {
			out = append(out, fmt.Sprintf("+%d more", len(l)-n))
			break
		}
		if i := strings.Index(strings.ToLower(s), "/resourcegroups/"); i >= 0 {
			s = s[i+len("/resourcegroups/"):]
		}
		out = append(out, s)
	}
	return out
}

// Evaluate compares the inventory, the state and the ARM requests of the runs since the baseline with the
// expectation. Requests count toward losses when they are DELETEs that ARM carried out (2xx, or a connection reset
// after the request was served) on a declared resource or one of its ancestors.
func Evaluate(exp Expectation, inv []AzureResource, st StateView, requests []emulator.LogEntry) Verdict {
	var v Verdict
	byID := map[string]AzureResource{}
	for _, r := range inv {
		byID[strings.ToLower(r.ID)] = r
	}
	declared := map[string]Decl{}
	declaredKeys := map[string]bool{}
	for _, d := range exp.Declared {
		declared[strings.ToLower(d.ARMID)] = d
		declaredKeys[d.Key()] = true
	}
	inState := map[string]record.Resource{}
	stateIDs := map[string]bool{}
	for _, r := range st.Resources {
		inState[r.Key()] = r
		if r.ARMID != "" {
			stateIDs[strings.ToLower(r.ARMID)] = true
		}
	}
	lost := map[string]bool{}
	for _, d := range exp.Declared {
		id := strings.ToLower(d.ARMID)
		got, ok := byID[id]
		if fp, was := exp.Baseline[id]; was && (!ok || got.Fingerprint() != fp) {
			lost[d.ARMID] = true
		}
		if !ok {
			v.Missing = append(v.Missing, d.ARMID)
		} else {
			for path, want := range d.Expect {
				if have := str(got.Body, strings.Split(path, ".")...); have != want {
					v.Stale = append(v.Stale, fmt.Sprintf("%s %s: %q, want %q", d.ARMID, path, have, want))
				}
			}
		}
		if r, ok := inState[d.Key()]; !ok || r.Ready.Status != record.StatusTrue {
			v.NotReady = append(v.NotReady, d.Key())
		}
	}
	for _, l := range requests {
		if l.Method != http.MethodDelete || !(l.Status >= 200 && l.Status < 300 || l.Status == 0 && l.Fault == "reset-after") {
			continue
		}
		p := strings.ToLower(l.Path)
		for id, d := range declared {
			if exp.Baseline != nil && exp.Baseline[id] == "" {
				continue // created by this revision: deleting it first is not a loss of anything
			}
			if id == p || strings.HasPrefix(id, p+"/") {
				lost[d.ARMID] = true
			}
		}
	}
	for id := range lost {
		v.Lost = append(v.Lost, id)
	}
	for _, r := range inv {
		id := strings.ToLower(r.ID)
		if _, ok := declared[id]; ok {
			continue
		}
		if stateIDs[id] {
			v.Undeleted = append(v.Undeleted, r.ID)
		} else {
			v.Orphaned = append(v.Orphaned, r.ID)
		}
	}
	// Duplicates: more than one Azure resource of a manifest's type carrying one of its names, or role
	// assignments granting the same role to the same principal at the same scope.
	for _, d := range exp.Declared {
		names := map[string]bool{strings.ToLower(d.AzureName): true}
		for _, n := range d.AltNames {
			names[strings.ToLower(n)] = true
		}
		var ids []string
		for _, r := range inv {
			if strings.EqualFold(r.Type, d.ARMType) && names[strings.ToLower(r.Name)] {
				ids = append(ids, r.ID)
			}
		}
		if len(ids) > 1 {
			v.Duplicated = append(v.Duplicated, d.ARMID+": "+strings.Join(ids, ", "))
		}
	}
	grants := map[string][]string{}
	for _, r := range inv {
		if strings.EqualFold(r.Type, "Microsoft.Authorization/roleAssignments") {
			role := str(r.Body, "properties", "roleDefinitionId")
			k := strings.ToLower(str(r.Body, "properties", "scope") + "|" + str(r.Body, "properties", "principalId") + "|" + role[strings.LastIndex(role, "/")+1:])
			grants[k] = append(grants[k], r.ID)
		}
	}
	for _, ids := range grants {
		if len(ids) > 1 {
			v.Duplicated = append(v.Duplicated, "role assignment: "+strings.Join(ids, ", "))
		}
	}
	for key, r := range inState {
		if !declaredKeys[key] && (r.ARMID == "" || byID[strings.ToLower(r.ARMID)].ID == "") {
			v.Leftover = append(v.Leftover, key)
		}
	}
	v.InFlight = len(st.Operations)
	for _, l := range [][]string{v.Missing, v.NotReady, v.Stale, v.Undeleted, v.Orphaned, v.Duplicated, v.Lost, v.Leftover} {
		sort.Strings(l)
	}
	return v
}

// Baseline fingerprints an inventory.
func Baseline(inv []AzureResource) map[string]string {
	out := make(map[string]string, len(inv))
	for _, r := range inv {
		out[strings.ToLower(r.ID)] = r.Fingerprint()
	}
	return out
}

// Check reads the inventory and the state file and evaluates them. A corrupted state file is reported in the
// verdict, not as an error; errors are the harness's own (ARM reads).
func Check(ctx context.Context, env *Env, prefix, statePath string, exp Expectation, requests []emulator.LogEntry) (Verdict, error) {
	inv, err := Inventory(ctx, env.Client, env.Sub, prefix)
	if err != nil {
		return Verdict{}, err
	}
	st, err := ReadState(statePath)
	v := Evaluate(exp, inv, st, requests)
	if err != nil {
		if !errors.Is(err, ErrCorrupted) {
			return v, err
		}
		v.Corrupted = err.Error()
	}
	return v, nil
}
