package reconcile

import "runtime/debug"

// returnMemory hands what a run no longer needs back to the operating
// system when it ends: the heap it freed (Go returns idle heap gradually,
// so a daemon that planned and applied 10,000 resources kept 40 MB of heap
// it no longer used between runs; one collection costs a few tens of
// milliseconds, once per run) and the state file's pages the run read (they
// stay in the page cache). Issue 12: RSS converged.
func (r *Reconciler) returnMemory() {
	debug.FreeOSMemory()
	if r.db != nil {
		if err := r.db.ReleasePages(); err != nil {
			r.log.Debug("releasing the state file's pages", "error", err)
		}
	}
}
