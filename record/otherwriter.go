package record

import "time"

// OtherWriter is a write to a resource gitaso manages, seen in the
// subscription's Activity Log, made with gitaso's own principal but not by
// this gitaso: another gitaso with its own state file (two daemons fighting
// over the same resources), or someone using gitaso's credential.
type OtherWriter struct {
	// Caller is the principal the log names (gitaso's own: its object or
	// application ID).
	Caller string `json:"caller"`
	// Operation is the ARM operation, e.g.
	// "Microsoft.Resources/subscriptions/resourceGroups/write".
	Operation string `json:"operation"`
	// At is when the newest such write succeeded; Writes how many the log
	// read showed.
	At     time.Time `json:"at"`
	Writes int       `json:"writes"`
	// SeenAt is when gitaso read it in the log.
	SeenAt time.Time `json:"seenAt"`
}
