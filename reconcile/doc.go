// Package reconcile wires gitaso's stages together: source → planner →
// executor → state, one run at a time.
//
// A run fetches the source, builds the graph (a revision with any input
// error is refused whole and recorded as such; the last good revision stays
// applied), optionally reads Azure back (refresh) to find drift and
// resources to adopt, plans, records the plan, applies it and records every
// resource's result, exports and the run in one state transaction.
//
// Nothing is lost, whatever the commit: a plan whose deletions exceed the
// deletion guard (Config.Guard), that declares nothing while resources are
// managed, whose source path disappeared, or whose deleted parents hold
// resources gitaso does not manage (cascade.go) is held — recorded as a run
// with outcome held and nothing applied — until ApproveDeletions releases
// exactly that revision's deletions (or Options.ApproveDeletions for one
// run); a held revision a newer one superseded is not approved
// (SupersededError). A refused revision (invalid: nothing of it applied)
// stands in state (state.DB.Refused) until a later revision renders; the
// last good revision is refreshed meanwhile without ending it. Moves (an ARM ID leaving one key for another) carry state over and
// delete nothing.
//
// Loop runs at start, on every new revision (polled), on Trigger (the API's
// POST /api/v1/sync and /approve, the webhook), and with a refresh every
// SyncPeriod. Triggers coalesce: one is pending at most, a refresh absorbs a
// pending poll, and a triggered run starts no sooner than MinTriggerInterval
// after the previous one.
package reconcile
