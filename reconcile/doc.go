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
//
// # What lives for a run, what lives across runs
//
// A run's state is a value made for it and handed from step to step: run
// (reconcile.go) holds the run's Options, its Report, when it started (a
// resource read in it is next due one sync period after that), the source
// path its revision lacks (the guard's path-missing hold), the state's
// rebuilt marker and whether it refreshes the last good revision. What a
// refresh read is a result of plan (and a dry run's Report, for SavePlan);
// the executor's results and operations reach the run's recorder
// (progress.go) through callbacks made for that run. Nothing of it is left
// on the Reconciler when the run ends.
//
// The Reconciler holds only what outlives a run:
//   - configuration and clients: the source, the state, the Azure clients,
//     Config, the logger, and when it was made (the Activity Log's writes
//     before it are not judged for another writer);
//   - the mutex that makes runs one at a time;
//   - the refresh schedule: when each resource was last read (lastRead),
//     when the next one is due (nextDue, which Loop waits for) and what the
//     Activity Log path remembers (activity);
//   - the last good revision and its units, refreshed after a refused one;
//   - what is logged once per revision rather than on every run of it (the
//     ignored objects, the hold);
//   - the daemon's state for Loop and the API: the pending trigger,
//     readiness, the last error, the source's and the state's health, and
//     whether a newer commit abandons a render (superseding).
package reconcile
