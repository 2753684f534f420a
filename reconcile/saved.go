package reconcile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// SavedPlanFormat names the format of a saved plan file.
const SavedPlanFormat = "gitaso.io/saved-plan/v1"

// ErrStalePlan is returned (wrapped, with the reason) when a saved plan no
// longer describes what applying it would do: the branch moved, the state
// changed (another apply ran), or Azure no longer matches what the plan
// read. Nothing is applied; plan again.
var ErrStalePlan = errors.New("saved plan is stale")

// SavedPlan is what `gitaso plan --out FILE` writes and `gitaso apply FILE`
// applies, exactly and nothing else (Terraform's saved-plan rule). It holds
// the plan's documented JSON form (no secret value: every value read from a
// Secret is redacted and looked up again when applied) and what the plan
// was made against.
type SavedPlan struct {
	Format    string    `json:"format"`
	CreatedAt time.Time `json:"createdAt"`
	// Version is the gitaso version that made it.
	Version string `json:"gitasoVersion,omitempty"`
	// Applied is the last revision the state had applied when the plan
	// was made, and State a digest of the state's resources (keys, ARM IDs,
	// applied hashes, generations): either changing makes the plan stale.
	Applied string `json:"appliedRevision"`
	State   string `json:"stateDigest"`
	// Refreshed says the plan read Azure (every resource): applying it reads
	// Azure again and refuses when the outcome differs.
	Refreshed bool `json:"refreshed"`
	// Observed are digests of what the plan read from Azure, by lower-cased
	// ARM ID ("absent": not found), without the fields ARM changes on its
	// own (etag, systemData, provisioningState).
	Observed map[string]string `json:"observed,omitempty"`
	Plan     *planner.Plan     `json:"plan"`
	// Flags are the settings `gitaso plan` was given (flag name → values;
	// no --substitute values, nothing secret), which `gitaso apply FILE`
	// takes for those it is not given: the plan names its own source.
	Flags map[string][]string `json:"flags,omitempty"`
}

// SavePlan returns the saved form of a dry run's report (PlanOnly).
func (r *Reconciler) SavePlan(rep *Report, refreshed bool, version string) (*SavedPlan, error) {
	if rep == nil || rep.Plan == nil {
		return nil, errors.New("no plan to save")
	}
	applied, digest, err := r.stateFingerprint()
	if err != nil {
		return nil, err
	}
	return &SavedPlan{Format: SavedPlanFormat, CreatedAt: time.Now().UTC(), Version: version, Applied: applied,
		State: digest, Refreshed: refreshed, Observed: observedDigests(rep.observed), Plan: rep.Plan}, nil
}

// observedDigests digests what a refresh read, resource by resource.
func observedDigests(obs planner.Observed) map[string]string {
	if len(obs) == 0 {
		return nil
	}
	out := make(map[string]string, len(obs))
	for id, b := range obs {
		out[id] = observedDigest(b)
	}
	return out
}

func observedDigest(b json.RawMessage) string {
	if b == nil {
		return "absent"
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		sum := sha256.Sum256(b)
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	delete(doc, "etag")
	delete(doc, "systemData")
	if props, ok := doc["properties"].(map[string]any); ok {
		delete(props, "provisioningState")
	}
	c, _ := json.Marshal(doc) // map keys sorted: canonical
	sum := sha256.Sum256(c)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// WriteTo writes the saved plan as indented JSON.
func (sp *SavedPlan) WriteTo(w io.Writer) (int64, error) {
	b, err := json.MarshalIndent(sp, "", "  ")
	if err != nil {
		return 0, err
	}
	n, err := w.Write(append(b, '\n'))
	return int64(n), err
}

// ReadSavedPlan reads a file written by WriteTo.
func ReadSavedPlan(r io.Reader) (*SavedPlan, error) {
	var sp SavedPlan
	dec := json.NewDecoder(r)
	if err := dec.Decode(&sp); err != nil {
		return nil, fmt.Errorf("read saved plan: %w", err)
	}
	if sp.Format != SavedPlanFormat {
		return nil, fmt.Errorf("read saved plan: format %q, want %q (a file written by gitaso plan --out)", sp.Format, SavedPlanFormat)
	}
	if sp.Plan == nil {
		return nil, errors.New("read saved plan: it holds no plan")
	}
	return &sp, nil
}

// ErrBeyondSavedPlan is returned (wrapped, naming the resource) when a
// later phase of ApplySaved, which applies the objects the saved plan
// showed as known after apply, would change a resource that is not one of
// them. The saved plan itself was applied; that phase applies nothing.
var ErrBeyondSavedPlan = errors.New("beyond the saved plan")

// ApplySaved applies a saved plan: it checks that the branch is still at
// the plan's revision and the state unchanged, plans again (reading Azure
// when the plan did) and refuses with ErrStalePlan unless that plan is the
// saved one; then it applies it. Then, as a normal apply (Once) does, it
// applies the objects the saved plan showed as known after apply once
// their values exist, in later phases (Report.Then): the reviewed plan
// listed them, with what they wait for, as Terraform's shows values known
// after apply. A later phase applies only those objects: one that would
// change any other resource is refused (ErrBeyondSavedPlan).
func (r *Reconciler) ApplySaved(ctx context.Context, sp *SavedPlan, approveDeletions bool) (*Report, error) {
	opts := Options{Trigger: "saved-plan", Refresh: sp.Refreshed, All: sp.Refreshed, ApproveDeletions: approveDeletions, expect: sp}
	r.mu.Lock()
	defer r.mu.Unlock()
	rep, err := r.once(ctx, opts)
	if err != nil {
		return rep, err
	}
	later := opts
	later.expect, later.deferredOf = nil, sp
	return rep, r.laterPhases(ctx, rep, later)
}

// onlyDeferred checks that a later phase of ApplySaved changes only
// objects the saved plan showed as known after apply.
func onlyDeferred(sp *SavedPlan, p *planner.Plan) error {
	known := make(map[string]bool, len(sp.Plan.Deferred))
	for _, d := range sp.Plan.Deferred {
		known[d.Key()] = true
	}
	for _, res := range p.Resources {
		if res.Action != planner.NoOp && res.Action != planner.Observe && !known[res.Key()] {
			return fmt.Errorf("%w: applying what the saved plan showed as known after apply, %s would be %s, which the saved plan did not show: "+
				"the saved plan was applied, this is not: plan again", ErrBeyondSavedPlan, res.ID(), res.Action)
		}
	}
	return nil
}

// stateFingerprint returns the last applied revision and a digest of the
// state's resources.
func (r *Reconciler) stateFingerprint() (string, string, error) {
	if r.db == nil {
		return "", "", nil
	}
	applied, err := r.db.LastGoodRevision()
	if err != nil {
		return "", "", fmt.Errorf("read the applied revision: %w", err)
	}
	prior, _, err := r.priorState()
	if err != nil {
		return "", "", err
	}
	return applied, stateDigest(prior), nil
}

func stateDigest(prior map[string]record.Resource) string {
	keys := make([]string, 0, len(prior))
	for k := range prior {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	h := sha256.New()
	for _, k := range keys {
		p := prior[k]
		for _, f := range []string{k, strings.ToLower(p.ARMID), p.AppliedHash, strconv.FormatInt(p.Generation, 10), p.Policy} {
			h.Write([]byte(f))
			h.Write([]byte{0})
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// checkSaved compares the plan made now with the saved one.
func (r *Reconciler) checkSaved(sp *SavedPlan, now *planner.Plan, prior map[string]record.Resource, observed planner.Observed) error {
	if now.Revision != sp.Plan.Revision {
		return fmt.Errorf("%w: the plan was made at revision %s, the branch is at %s now: plan again",
			ErrStalePlan, planner.ShortRevision(sp.Plan.Revision), planner.ShortRevision(now.Revision))
	}
	if r.db != nil {
		applied, err := r.db.LastGoodRevision()
		if err != nil {
			return fmt.Errorf("read the applied revision: %w", err)
		}
		if applied != sp.Applied {
			return fmt.Errorf("%w: revision %s was applied since the plan was made (against %s): plan again",
				ErrStalePlan, planner.ShortRevision(applied), orNone(planner.ShortRevision(sp.Applied)))
		}
		if d := stateDigest(prior); d != sp.State {
			return fmt.Errorf("%w: the state changed since the plan was made (another apply, or an operation that was in flight ended): plan again", ErrStalePlan)
		}
	}
	ids := make([]string, 0, len(sp.Observed))
	for id := range sp.Observed {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		b, read := observed[id]
		switch {
		case !read:
			return fmt.Errorf("%w: %s could not be read again to check it still is what the plan read: plan again", ErrStalePlan, id)
		case observedDigest(b) != sp.Observed[id]:
			return fmt.Errorf("%w: Azure no longer matches what the plan read: %s changed since: plan again", ErrStalePlan, id)
		}
	}
	// Compared in the saved form: what was reviewed is the plan's JSON.
	b, err := json.Marshal(now)
	if err != nil {
		return fmt.Errorf("encode plan: %w", err)
	}
	var again planner.Plan
	if err := json.Unmarshal(b, &again); err != nil {
		return fmt.Errorf("decode plan: %w", err)
	}
	if k, why := planDifference(sp.Plan, &again); k != "" {
		what := "Azure no longer matches what the plan read"
		if !sp.Refreshed {
			what = "the plan made now differs"
		}
		return fmt.Errorf("%w: %s: %s %s: plan again", ErrStalePlan, what, k, why)
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// planDifference returns the first resource whose action, request or
// changes differ between two plans, and how; "" when they are the same.
func planDifference(saved, now *planner.Plan) (string, string) {
	index := func(p *planner.Plan) map[string]*planner.Resource {
		m := make(map[string]*planner.Resource, len(p.Resources))
		for _, r := range p.Resources {
			m[r.Key()] = r
		}
		return m
	}
	a, b := index(saved), index(now)
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if a[k] == nil {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		x, y := a[k], b[k]
		switch {
		case x == nil:
			return k, "is " + y.Action.String() + " now and was not in the plan"
		case y == nil:
			return k, "was " + x.Action.String() + " in the plan and is not planned now"
		case x.Action != y.Action:
			return k, "was " + x.Action.String() + ", is " + y.Action.String() + " now"
		case !sameRequest(x.Request, y.Request):
			return k, "its request differs"
		case !sameJSON(x.Changes, y.Changes):
			return k, "its changes differ"
		}
	}
	return "", ""
}

func sameRequest(a, b *planner.Request) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Method == b.Method && a.Path == b.Path && sameJSON(a.Body, b.Body)
}

func sameJSON(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}
