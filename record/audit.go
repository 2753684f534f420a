package record

import "time"

// Audit actions: what an audit event records.
const (
	AuditSignIn   = "sign-in"  // a person signed in (OIDC)
	AuditSignOut  = "sign-out" // a person signed out
	AuditToken    = "token"    // a named bearer token was used (once per token and minute)
	AuditSync     = "sync"     // a run was asked for (POST /api/v1/sync)
	AuditApprove  = "approve"  // held deletions were approved (the page, the API, a pull request)
	AuditAdmin    = "admin"    // a token was made or revoked, the policy changed
	AuditReadDeny = "read"     // a read refused (the audit trail, a namespace)
)

// Audit outcomes.
const (
	AuditAllowed = "allowed" // done
	AuditRefused = "refused" // refused for a missing right or credential
	AuditFailed  = "failed"  // allowed, but it failed (e.g. nothing held to approve)
)

// AuditEvent is one entry of the audit trail: who did what, when, from
// where, with which plan. It never holds a secret: a token is named, never
// carried; a cookie, a code or a key never appears.
type AuditEvent struct {
	// ID is assigned by the state when zero; IDs increase.
	ID      uint64    `json:"id"`
	At      time.Time `json:"at"`
	Action  string    `json:"action"`
	Outcome string    `json:"outcome"`
	// Who is the caller as access.Identity.String() names it ("user
	// alice@example.com", "token ci", "forge gitea alice", "anonymous");
	// Kind, Subject, Groups and Issuer are its parts.
	Who     string   `json:"who"`
	Kind    string   `json:"kind,omitempty"`
	Subject string   `json:"subject,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	Issuer  string   `json:"issuer,omitempty"`
	// From is where the request came from: the client address (and the
	// X-Forwarded-For chain a proxy added), or a pull request's URL.
	From string `json:"from,omitempty"`
	// Right and Namespaces: the right asked for and the namespaces it was
	// asked for (a refusal names the ones missing).
	Right      string   `json:"right,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
	// Revision and Plan name the held revision and the plan digest an
	// approval was for.
	Revision string `json:"revision,omitempty"`
	Plan     string `json:"plan,omitempty"`
	// Detail says more in a sentence (a refusal's reason, a path).
	Detail string `json:"detail,omitempty"`
}
