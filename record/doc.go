// Package record defines the records gitaso keeps between runs: what was
// applied for each resource (Resource) with its Ready Condition, the runs
// (Run, Outcome), the deletions held for approval (Hold, Approval) and the
// long-running operations in flight (Operation); what each run touched
// (Touched, ResourceRun) and each resource's last change (Change).
//
// It is a leaf (standard library only). Package state stores these records
// in bbolt; the planner reads them without depending on the store.
package record
