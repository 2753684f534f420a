package record

import (
	"encoding/json"
	"time"
)

// Touched is one resource a run acted on: what it set out to do (the plan's
// action: create, update, adopt, delete, move...) and how it ended (the
// executor's outcome: applied, deleted, failed, skipped...). A run records
// the resources it changed or failed on, not the ones that were up to date.
type Touched struct {
	Key     string `json:"key"`
	Action  string `json:"action"`
	Outcome string `json:"outcome"`
	// Error is the failure's message (the Ready condition's), for failed and
	// skipped resources.
	Error string `json:"error,omitempty"`
}

// ResourceRun is one run that touched a resource, as the resource's history
// lists it (newest first).
type ResourceRun struct {
	Run       uint64    `json:"run"`
	Revision  string    `json:"revision,omitempty"`
	StartedAt time.Time `json:"startedAt"`
	Action    string    `json:"action"`
	Outcome   string    `json:"outcome"`
	Error     string    `json:"error,omitempty"`
}

// Change is the last change of a resource's applied body: the body before it
// (secret values redacted, as AppliedBody), when and at which revision it
// was replaced. The body after it is the resource's AppliedBody.
type Change struct {
	Revision string    `json:"revision,omitempty"`
	At       time.Time `json:"at"`
	Action   string    `json:"action,omitempty"`
	// Previous is the applied body before the change, secrets redacted;
	// empty when the change created the resource.
	Previous json.RawMessage `json:"previous,omitempty"`
}
