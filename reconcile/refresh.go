package reconcile

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
)

// Reading Azure back is called refresh, everywhere: the periodic refresh
// of resources whose sync period has elapsed, and the refresh a run makes
// when asked (--refresh, POST /api/v1/sync). How Azure is read in bulk is
// the azure package's (azure.RefreshFromGraph, RefreshCollections,
// RefreshEach); what is due and how the results are judged is here:
//
//  0. a periodic resync (not All) keeps only the due resources the
//     subscription's Activity Log shows written since their last read, and
//     a full read every FullResyncEvery periods (activity.go);
//  1. the due resources are read from Resource Graph, per credential;
//  2. proxy resources the graph does not index are read a collection at a
//     time;
//  3. the plan is made against those results; every resource they say has
//     drifted or can be adopted (graph rows lag behind ARM), and every one
//     still unread, is a suspect, confirmed with a GET;
//  4. the final plan is made against what the reads returned.
//
// When the graph cannot be queried (no permission, a cloud without it) every
// due resource is read with a GET.

// syncPeriodFor returns the sync period of a node: per kind ("Kind" or
// "group/Kind"), then per namespace, then the default.
func (r *Reconciler) syncPeriodFor(n *planner.Node) time.Duration {
	if p, ok := r.cfg.KindSyncPeriod[n.Kind.Group+"/"+n.Kind.Kind]; ok {
		return p
	}
	if p, ok := r.cfg.KindSyncPeriod[n.Kind.Kind]; ok {
		return p
	}
	if p, ok := r.cfg.NamespaceSyncPeriod[n.Namespace]; ok {
		return p
	}
	return r.cfg.SyncPeriod
}

// due reports whether a node should be read back now: always when it is
// not in state yet (it may exist in Azure: adoption), else when its sync
// period has elapsed.
func (r *Reconciler) due(n *planner.Node, in planner.Input, now time.Time, all bool) bool {
	if _, known := in.Prior[n.Key()]; all || !known {
		return true
	}
	p := r.syncPeriodFor(n)
	if p <= 0 {
		return false
	}
	last, ok := r.lastRead[n.Key()]
	return !ok || now.Sub(last) >= p
}

// nextRefresh returns when the next node becomes due, zero if none will.
func (r *Reconciler) nextRefresh(g *planner.Graph) time.Time {
	var next time.Time
	for _, n := range g.Nodes {
		p := r.syncPeriodFor(n)
		if p <= 0 {
			continue
		}
		t := r.lastRead[n.Key()].Add(p)
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

// refresh reads Azure back for the due nodes and returns the final plan
// and what it read (nil when nothing was due). A read is dated runStart,
// when the run started. A dry run (gitaso plan) does not count as a read:
// the next run reads again.
func (r *Reconciler) refresh(ctx context.Context, g *planner.Graph, in planner.Input, runStart time.Time, all, dryRun bool) (*planner.Plan, planner.Observed, error) {
	now := time.Now()
	var due []*planner.Node
	for _, n := range g.Nodes {
		if r.due(n, in, now, all) {
			due = append(due, n)
		}
	}
	if len(due) == 0 {
		p, err := g.Plan(in)
		return p, nil, err
	}
	cf := &clientsFor{r: r, g: g}
	// A periodic resync reads what the Activity Log names (activity.go).
	var unchanged []*planner.Node
	if !all {
		due, unchanged = r.byActivity(ctx, cf, due, in, dryRun)
	}
	rows, missing := r.refreshFromGraph(ctx, cf, due)
	// Resource groups the graph did not return are listed, a subscription at
	// a time: what lies in a group that does not exist is not read at all.
	grouped, left := azure.RefreshGroups(ctx, targets(cf, missing), r.log)
	// Proxy resources (queues, containers, role assignments, ...) are not
	// in the graph: read them a collection at a time.
	listed, rest := azure.RefreshCollections(ctx, left, r.cfg.ReadParallelism, r.log)
	for id, b := range grouped {
		listed[id] = b
	}
	in.Observed = planner.Observed{}
	for id, b := range rows {
		in.Observed[id] = b
	}
	for id, b := range listed {
		in.Observed[id] = b
	}
	suspects := rest
	// Only a Resource Graph row can be stale: a resource read otherwise
	// (listed, or known absent) is not a suspect, and with no rows there
	// is no plan to make twice (a first apply of 100,000 resources).
	if len(rows) > 0 {
		p, err := g.Plan(in)
		if err != nil {
			return nil, nil, err
		}
		for _, res := range p.Resources {
			if res.Action == planner.Drift || res.Action == planner.Adopt {
				// A collection list is as fresh as a GET; graph rows lag.
				if n := g.Node(res.Key()); n != nil && listed[strings.ToLower(n.ARMID)] == nil {
					suspects = append(suspects, targets(cf, []*planner.Node{n})...)
				}
			}
		}
	}
	confirmed := azure.RefreshEach(ctx, suspects, r.cfg.ReadParallelism, r.log)
	observed := planner.Observed{}
	for id, b := range rows {
		observed[id] = b
	}
	for id, b := range listed {
		observed[id] = b
	}
	for id, b := range confirmed {
		observed[id] = b
	}
	// Suspects whose GET failed (not a 404) are not judged this time.
	for _, t := range suspects {
		if _, ok := confirmed[strings.ToLower(t.ARMID)]; !ok {
			delete(observed, strings.ToLower(t.ARMID))
		}
	}
	// The next read is due one sync period after this run started, not
	// after this read ended: a resync keeps its period.
	readAt := runStart
	if readAt.IsZero() || readAt.After(now) {
		readAt = now
	}
	if !dryRun {
		var read []*planner.Node
		r.readMu.Lock()
		for _, n := range due {
			if _, ok := observed[strings.ToLower(n.ARMID)]; ok {
				r.lastRead[n.Key()] = readAt
				read = append(read, n)
			}
		}
		for _, n := range unchanged {
			r.lastRead[n.Key()] = readAt
		}
		r.readMu.Unlock()
		r.countReads(read, unchanged)
	}
	in.Observed = observed
	p, err := g.Plan(in)
	return p, observed, err
}

// targets are the nodes as the azure package reads them back, each with
// its credential's client (nil when none could be made: left unread).
func targets(cf *clientsFor, nodes []*planner.Node) []azure.RefreshTarget {
	out := make([]azure.RefreshTarget, 0, len(nodes))
	for _, n := range nodes {
		cli, _ := cf.client(n.Credential)
		out = append(out, azure.RefreshTarget{ARMID: n.ARMID, APIVersion: n.Kind.APIVersion,
			Container: n.Kind.Scope == "location", Subscription: n.Subscription, Client: cli})
	}
	return out
}

// refreshFromGraph queries Resource Graph for the nodes, per credential. It
// returns the rows found and the nodes that need another read (not
// returned, or the query failed).
func (r *Reconciler) refreshFromGraph(ctx context.Context, cf *clientsFor, nodes []*planner.Node) (planner.Observed, []*planner.Node) {
	byCred := map[string][]*planner.Node{}
	var creds []string
	for _, n := range nodes {
		if _, ok := byCred[n.Credential]; !ok {
			creds = append(creds, n.Credential)
		}
		byCred[n.Credential] = append(byCred[n.Credential], n)
	}
	sort.Strings(creds)
	rows := planner.Observed{}
	var missing []*planner.Node
	for _, cred := range creds {
		ns := byCred[cred]
		cli, err := cf.client(cred)
		if err != nil {
			missing = append(missing, ns...)
			continue
		}
		found, err := azure.RefreshFromGraph(ctx, cli, targets(cf, ns))
		if err != nil {
			r.log.WarnContext(ctx, "resource graph query failed; reading resources one by one", "credential", cred, "error", err)
			missing = append(missing, ns...)
			continue
		}
		for _, n := range ns {
			id := strings.ToLower(n.ARMID)
			if b, ok := found[id]; ok {
				rows[id] = b
			} else {
				missing = append(missing, n)
			}
		}
	}
	return rows, missing
}
