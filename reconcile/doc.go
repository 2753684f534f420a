// Package reconcile wires gitaso's stages together: source → planner →
// executor → state, one run at a time.
//
// A run fetches the source, builds the graph (a revision with any input
// error is refused whole and recorded as such; the last good revision stays
// applied), optionally reads Azure back (refresh) to find drift and
// resources to adopt, plans, records the plan, applies it and records every
// resource's result, exports and the run in one state transaction.
//
// Loop runs at start, on every new revision (polled), on Trigger (the API's
// POST /api/v1/sync), and with a refresh every SyncPeriod.
package reconcile
