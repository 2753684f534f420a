package record

import "time"

// Operation is an in-flight ARM long-running operation. The executor records
// it (in its own Update, so it is durable before polling starts) and deletes
// it when the operation finishes; after a crash, Operations lists what to
// resume polling.
type Operation struct {
	// Key identifies the operation, normally the resource key.
	Key       string    `json:"key"`
	ARMID     string    `json:"armId"`
	Method    string    `json:"method"` // PUT or DELETE
	StartedAt time.Time `json:"startedAt"`
	// PollURL is the Azure-AsyncOperation or Location URL to poll.
	PollURL string `json:"pollUrl,omitempty"`
}
