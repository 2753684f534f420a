package record

import "time"

// Outcome is how a run ended.
type Outcome string

// Run outcomes. A run still in progress has an empty Outcome.
const (
	OutcomeSucceeded Outcome = "succeeded" // every action applied
	OutcomeFailed    Outcome = "failed"    // nothing or not all could be applied because of errors
	OutcomeRefused   Outcome = "refused"   // the revision was invalid and not applied at all
	OutcomePartial   Outcome = "partial"   // some resources failed, the rest was applied
	OutcomeHeld      Outcome = "held"      // the revision's deletions wait for an approval; nothing of it was applied
)

// Outcomes lists every outcome, in a stable order (for metrics).
var Outcomes = []Outcome{OutcomeSucceeded, OutcomeFailed, OutcomeRefused, OutcomePartial, OutcomeHeld}

// Run is one reconcile: which revision, why, when, and what it did.
type Run struct {
	// ID is assigned by PutRun when zero; IDs increase with every new run.
	ID         uint64    `json:"id"`
	Revision   string    `json:"revision"`
	Trigger    string    `json:"trigger,omitempty"` // e.g. "interval", "webhook", "api", "startup"
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	Outcome    Outcome   `json:"outcome,omitempty"`
	Error      string    `json:"error,omitempty"`
	// Counts is the number of resources per action (create, update, delete...).
	Counts  map[string]int `json:"counts,omitempty"`
	Summary string         `json:"summary,omitempty"`
	// Held says why the run's deletions wait for an approval (Outcome
	// held), or which deletions were held back in an otherwise applied run
	// (a parent holding resources gitaso does not manage).
	Held *Hold `json:"held,omitempty"`
	// Rebuilt says what a run over a rebuilt state (`gitaso state
	// rebuild`) did: how many resources it adopted without a write and
	// with a PUT, and whether the state's rebuilt marker ends with it.
	Rebuilt string `json:"rebuilt,omitempty"`
	// Phase is the run's phase when it is a later phase (2, 3, ...) of a
	// reconcile that applied in phases (objects known after apply applied
	// once their values exist); PhaseOf is then the ID of its first phase.
	// Zero for a first (or only) phase.
	Phase   int    `json:"phase,omitempty"`
	PhaseOf uint64 `json:"phaseOf,omitempty"`
}
