package record

import "time"

// Hold reasons.
const (
	// HoldMassDeletion: the revision deletes more resources than the
	// deletion guard allows.
	HoldMassDeletion = "MassDeletion"
	// HoldEmpty: the revision declares no resource at all while gitaso
	// manages some (a repository emptied, a path removed).
	HoldEmpty = "EmptyRevision"
	// HoldPathMissing: the source path does not exist at the revision.
	HoldPathMissing = "PathMissing"
	// HoldUnmanagedChildren: deleting a parent would take resources gitaso
	// does not manage with it through ARM's cascade.
	HoldUnmanagedChildren = "UnmanagedChildren"
)

// Hold describes deletions that wait for an explicit approval.
type Hold struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
	// Deletions is how many resources the revision would delete from
	// Azure; Managed how many gitaso manages (in state).
	Deletions int `json:"deletions"`
	Managed   int `json:"managed"`
	// Keys are the state keys of the held deletions, sorted.
	Keys []string `json:"keys,omitempty"`
	// Unmanaged are the ARM IDs of resources gitaso does not manage that a
	// held deletion would take with it.
	Unmanaged []string `json:"unmanaged,omitempty"`
	// Plan is the held plan's digest (PlanDigest) as the API shows it, for
	// an approval to name; not stored.
	Plan string `json:"plan,omitempty"`
}

// Approval releases the held deletions of one revision: exactly the
// resources in Keys, nothing else.
type Approval struct {
	Revision   string    `json:"revision"`
	Keys       []string  `json:"keys"`
	ApprovedAt time.Time `json:"approvedAt"`
	// By says who approved: the caller as access.Identity names it ("user
	// alice@example.com", "token ci", "forge gitea alice"), or where the
	// approval came from ("api", "cli") before there were identities.
	By string `json:"by,omitempty"`
	// Plan is the digest of the held plan approved (Hold.PlanDigest).
	Plan string `json:"plan,omitempty"`
}
