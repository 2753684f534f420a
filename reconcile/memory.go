package reconcile

import (
	"runtime/debug"

	"github.com/gitaso/gitaso/internal/rss"
)

// returnMemory hands what a run no longer needs back to the operating
// system when it ends: the heap it freed (Go returns idle heap gradually,
// so a daemon that planned and applied 10,000 resources kept 40 MB of heap
// it no longer used between runs; one collection costs a few tens of
// milliseconds, once per run), the state file's pages the run read (they
// stay in the page cache) and the executable's pages (package
// initialisation alone leaves 42 MB of them resident; what the next run
// uses comes back from the page cache). Issue 12: RSS converged.
func (r *Reconciler) returnMemory() {
	debug.FreeOSMemory()
	if r.db != nil {
		if err := r.db.ReleasePages(); err != nil {
			r.log.Debug("releasing the state file's pages", "error", err)
		}
	}
	dropExecutablePages(r)
}

// dropExecutablePages drops the executable's pages from the resident set:
// before the first run (what initialisation touched) and after each.
func dropExecutablePages(r *Reconciler) {
	if kb, err := rss.DropExecutablePages(); err != nil {
		r.log.Debug("dropping the executable's pages", "error", err)
	} else {
		r.log.Debug("dropped the executable's pages from the resident set", "kB", kb)
	}
}
