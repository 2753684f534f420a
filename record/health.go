package record

import "time"

// Health is what the daemon's loop knows about its own work, beside the
// runs: whether it can read its source and write its state. It is kept in
// memory (a state that cannot be written cannot hold it) and served by GET
// /api/v1/status, /metrics and /readyz.
type Health struct {
	// Ready is false when /readyz answers 503; Reason says why.
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
	// Source is the Git repository (or directory) the loop reads.
	Source SourceHealth `json:"source"`
	// State is the state file's writes.
	State StateHealth `json:"state"`
}

// SourceHealth is the outcome of the loop's fetches of its source, as
// Flux's GitRepository Ready condition: it is failing from the first fetch
// that failed (network, TLS, authentication, a repository or branch gone,
// a server that did not answer in time, a render that could not read what
// it needs) until one succeeds. A revision that is fetched but refused is
// not a source failure: the run records it.
type SourceHealth struct {
	// URL is the repository's URL without credentials, or the directory.
	URL    string `json:"url,omitempty"`
	Branch string `json:"branch,omitempty"`
	// Failing is true from a failed fetch until one succeeds.
	Failing bool `json:"failing"`
	// Error is the last failed fetch's error (credentials never appear in
	// it); empty while the source is not failing.
	Error string `json:"error,omitempty"`
	// FailingSince is when the first fetch of the current failures failed.
	FailingSince time.Time `json:"failingSince,omitzero"`
	// ConsecutiveFailures counts the fetches that failed since the last
	// that succeeded; FailuresTotal every failed fetch since the process
	// started.
	ConsecutiveFailures int    `json:"consecutiveFailures"`
	FailuresTotal       uint64 `json:"failuresTotal"`
	// LastAttemptAt and LastSuccessAt are when the source was last fetched
	// and last fetched successfully (zero: not yet).
	LastAttemptAt time.Time `json:"lastAttemptAt,omitzero"`
	LastSuccessAt time.Time `json:"lastSuccessAt,omitzero"`
	// Revision is the revision the last successful fetch read.
	Revision string `json:"revision,omitempty"`
}

// StateHealth is the outcome of the loop's writes to the state file: it is
// failing from a run that could not record (a full disk, a read-only
// file system) until a run records again. Nothing is applied that cannot
// be recorded first, so a failure here is safe but stops the daemon's
// work: the loop retries with a back-off.
type StateHealth struct {
	Failing             bool      `json:"failing"`
	Error               string    `json:"error,omitempty"`
	FailingSince        time.Time `json:"failingSince,omitzero"`
	ConsecutiveFailures int       `json:"consecutiveFailures"`
	FailuresTotal       uint64    `json:"failuresTotal"`
	// NextRetryAt is when the loop tries again (zero: no retry scheduled).
	NextRetryAt time.Time `json:"nextRetryAt,omitzero"`
}
