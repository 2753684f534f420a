package anchor

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// The hand-over's proof (issue 28): who wrote each resource, by time, from the emulator's write log, and who
// manages each resource at the end of each phase, from the cluster's ASO objects and gitaso's state. Pure
// functions, tested without a cluster (handover_test.go).

// Who may write to ARM in a phase.
const (
	sideASO    = "aso"
	sideGitaso = "gitaso"
	sideNone   = ""      // nobody: import and hand-over write nothing
	sideOther  = "other" // a principal that is neither ASO's nor gitaso's (the harness's own set-up)
)

// PhaseWindow is a phase's time span and the side that may write in it.
type PhaseWindow struct {
	Name   string    `json:"name"`
	Writer string    `json:"writer"` // "aso", "gitaso" or "" (nobody)
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
}

// WriteCheck is the write log's verdict on a hand-over.
type WriteCheck struct {
	Writes int `json:"writes"` // PUT, PATCH and DELETE requests of ARM resources, answered or not
	// ByPhase counts writes per phase and side ("aso", "gitaso", "other").
	ByPhase map[string]map[string]int `json:"byPhase"`
	// Resources counts, per phase and side, the resources written.
	Resources map[string]map[string]int `json:"resourcesWritten"`
	// Both are the resources written by more than one side in one phase, "phase: resource (sides)".
	Both []string `json:"writtenByBoth"`
	// Unexpected are the writes of a side the phase does not let write, "phase: side METHOD path status".
	Unexpected []string `json:"unexpectedWrites"`
	// Outside are the writes in no phase.
	Outside []string `json:"outsidePhases"`
}

// OK reports no resource written by both sides in a phase and no write by a side that may not write.
func (c WriteCheck) OK() bool {
	return len(c.Both) == 0 && len(c.Unexpected) == 0 && len(c.Outside) == 0
}

// isResourceWrite reports a write of an ARM resource's state: PUT, PATCH or DELETE (a POST is an action such as
// listKeys or a Resource Graph query, counted with the traffic but not as a write of the resource).
func isResourceWrite(method string) bool {
	return method == http.MethodPut || method == http.MethodPatch || method == http.MethodDelete
}

// checkWrites files each write of recs under the phase its time falls in (Start <= t < End; the last phase
// includes its End) and the side sideOf names for its principal, and finds the resources written by more than
// one side in a phase and the writes of a side the phase does not let write.
func checkWrites(recs []emulator.WriteRecord, phases []PhaseWindow, sideOf func(principal string) string) WriteCheck {
	c := WriteCheck{ByPhase: map[string]map[string]int{}, Resources: map[string]map[string]int{}}
	writers := map[string]map[string]map[string]bool{} // phase -> resource -> sides
	for _, r := range recs {
		if !isResourceWrite(r.Method) {
			continue
		}
		c.Writes++
		side := sideOf(r.Principal)
		res := strings.ToLower(r.Path)
		ph, ok := phaseAt(phases, r.Time)
		if !ok {
			c.Outside = append(c.Outside, fmt.Sprintf("%s %s %s %s %d", r.Time.Format(time.RFC3339Nano), side, r.Method, res, r.Status))
			continue
		}
		if c.ByPhase[ph.Name] == nil {
			c.ByPhase[ph.Name] = map[string]int{}
			writers[ph.Name] = map[string]map[string]bool{}
		}
		c.ByPhase[ph.Name][side]++
		if writers[ph.Name][res] == nil {
			writers[ph.Name][res] = map[string]bool{}
		}
		writers[ph.Name][res][side] = true
		if side != ph.Writer {
			c.Unexpected = append(c.Unexpected, fmt.Sprintf("%s: %s %s %s %d", ph.Name, nameSide(side), r.Method, res, r.Status))
		}
	}
	for _, ph := range phases {
		for res, sides := range writers[ph.Name] {
			if c.Resources[ph.Name] == nil {
				c.Resources[ph.Name] = map[string]int{}
			}
			for s := range sides {
				c.Resources[ph.Name][s]++
			}
			if len(sides) > 1 {
				c.Both = append(c.Both, fmt.Sprintf("%s: %s (%s)", ph.Name, res, strings.Join(sortedKeys(sides), ", ")))
			}
		}
	}
	sort.Strings(c.Both)
	return c
}

// writesIn counts by side the writes in the phase's window of the resources whose path match accepts.
func writesIn(recs []emulator.WriteRecord, ph PhaseWindow, match func(path string) bool, sideOf func(string) string) map[string]int {
	out := map[string]int{}
	for _, r := range recs {
		if isResourceWrite(r.Method) && !r.Time.Before(ph.Start) && !r.Time.After(ph.End) && match(r.Path) {
			out[sideOf(r.Principal)]++
		}
	}
	return out
}

func phaseAt(phases []PhaseWindow, t time.Time) (PhaseWindow, bool) {
	for i, ph := range phases {
		last := i == len(phases)-1
		if !t.Before(ph.Start) && (t.Before(ph.End) || (last && t.Equal(ph.End))) {
			return ph, true
		}
	}
	return PhaseWindow{}, false
}

func nameSide(s string) string {
	if s == sideNone {
		return "nobody"
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ObjectView is what the hand-over needs of an ASO object in the cluster.
type ObjectView struct {
	Ref    string `json:"ref"`    // "Kind namespace/name"
	ARMID  string `json:"armId"`  // its resource's ARM ID (ASO's resource-id annotation, else status.id)
	Policy string `json:"policy"` // serviceoperator.azure.com/reconcile-policy ("" ASO's default, manage)
	Gone   bool   `json:"gone,omitempty"`
}

// asoManages reports whether ASO's controller manages the object's resource: the object exists and its policy
// is not skip (manage and detach-on-delete both manage).
func (v ObjectView) asoManages() bool { return !v.Gone && v.Policy != "skip" }

// ManagerCheck is who manages each ASO object's resource at the end of a phase.
type ManagerCheck struct {
	Phase    string `json:"phase"`
	Expected string `json:"expected"` // the side that should manage every resource ("" either, one each)
	Objects  int    `json:"objects"`
	ASO      int    `json:"aso"`    // ASO manages (policy not skip)
	Gitaso   int    `json:"gitaso"` // the object says skip and gitaso's state holds the resource
	// Held are the resources ASO manages that gitaso's state also holds (after an import, by design: gitaso
	// refuses to write what an ASO object manages), "Kind ns/name".
	Held []string `json:"heldByBoth,omitempty"`
	// Neither are the resources whose object says skip (or is gone) and that gitaso's state does not hold.
	Neither []string `json:"neither,omitempty"`
	// Wrong are the resources managed by a side other than Expected.
	Wrong []string `json:"wrongManager,omitempty"`
	// AllowHeld accepts Held (the phase between import and hand-over).
	AllowHeld bool `json:"allowHeld,omitempty"`
}

// OK reports every resource managed by the expected side, none by no one, and none held by both unless allowed.
func (c ManagerCheck) OK() bool {
	return len(c.Neither) == 0 && len(c.Wrong) == 0 && (c.AllowHeld || len(c.Held) == 0)
}

// classifyManagers says who manages each object's resource: ASO when its policy is not skip, gitaso when the
// object says skip and gitaso's state (held: lower-cased ARM IDs) holds it, no one otherwise.
func classifyManagers(phase, expected string, objs []ObjectView, held map[string]bool, allowHeld bool) ManagerCheck {
	c := ManagerCheck{Phase: phase, Expected: expected, Objects: len(objs), AllowHeld: allowHeld}
	for _, o := range objs {
		inState := o.ARMID != "" && held[strings.ToLower(o.ARMID)]
		var by string
		switch {
		case o.asoManages():
			by = sideASO
			c.ASO++
			if inState {
				c.Held = append(c.Held, o.Ref)
			}
		case inState:
			by = sideGitaso
			c.Gitaso++
		default:
			c.Neither = append(c.Neither, o.Ref)
			continue
		}
		if expected != "" && by != expected {
			c.Wrong = append(c.Wrong, fmt.Sprintf("%s (%s)", o.Ref, by))
		}
	}
	sort.Strings(c.Held)
	sort.Strings(c.Neither)
	sort.Strings(c.Wrong)
	return c
}

// Traffic is one side's ARM requests in a phase.
type Traffic struct {
	Reads   int64 `json:"reads"`   // GET and HEAD, and Resource Graph queries (POST)
	Writes  int64 `json:"writes"`  // PUT, PATCH and DELETE
	Actions int64 `json:"actions"` // other POSTs (listKeys and the like)
	Tokens  int64 `json:"tokens"`  // token requests (Entra ID, managed identity)
	// ByOperation counts "METHOD type status".
	ByOperation map[string]int64 `json:"byOperation"`
}

// countTraffic sums a request log by side.
func countTraffic(log []emulator.LogEntry, sideOf func(principal string) string) map[string]*Traffic {
	out := map[string]*Traffic{}
	for _, e := range log {
		side := sideOf(e.Principal)
		t := out[side]
		if t == nil {
			t = &Traffic{ByOperation: map[string]int64{}}
			out[side] = t
		}
		t.ByOperation[fmt.Sprintf("%s %s %d", e.Method, e.Type, e.Status)]++
		switch {
		case e.Type == "identity":
			t.Tokens++
		case e.Method == http.MethodGet || e.Method == http.MethodHead:
			t.Reads++
		case isResourceWrite(e.Method):
			t.Writes++
		case e.Method == http.MethodPost && e.Type == "microsoft.resourcegraph/resources":
			t.Reads++
		default:
			t.Actions++
		}
	}
	return out
}
