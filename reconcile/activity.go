package reconcile

import (
	"context"
	"errors"
	"hash/maphash"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// A resync whose cost does not grow with the resource count: instead of
// reading every due resource, a periodic resync asks each subscription's
// Activity Log (one request per credential and subscription) which
// resources were written since they were last read, and reads only those
// (with the usual bulk paths, refresh.go); the others count as read. A
// write to a resource names its children too (a write to a parent may
// change them; deleting a resource group deletes all below). The log does
// not show everything (a change made by Azure itself, an event lost), so
// each resource is read in full every FullResyncEvery sync periods, at
// startup, on an explicit refresh (All), and whenever the log cannot be
// read (no Microsoft.Insights/eventtypes/values/read: logged once).
//
// Azure's log lags behind the writes it records: each query starts
// ActivityLogOverlap before the resource's last read. gitaso's own writes
// are skipped only when recognised safely: the event's caller is the
// credential's own principal and gitaso recorded a write of that resource
// spanning the event's time. Anything else is read (cheap).
//
// A write to a managed resource that succeeded with the credential's own
// principal, after this process started, outside every write this gitaso
// attempted of it (give or take ActivityLogSkew), was made by another
// writer using gitaso's identity:
// another gitaso with its own state file (two daemons fighting over the
// same resources, each correcting the other's "drift"), or the credential
// used by hand. That is not routine drift: it is logged as a warning,
// recorded on the resource (record.Resource.OtherWriter, in the API and on
// the page) and counted (OtherWriterMetrics). The record stays until a later
// log read of the resource shows no such write.

// maxActivityWindow is how far back the log is asked (Azure keeps 90 days).
const maxActivityWindow = 89 * 24 * time.Hour

// activityState is what the log path remembers between runs.
type activityState struct {
	mu sync.Mutex
	// sinceFull counts, per node key, the resyncs judged by the log since
	// the node was last read.
	sinceFull map[string]int
	// own are gitaso's writes, by ownKey of the ARM ID (a hash, not the
	// ID: the map lives as long as the daemon, and the IDs alone took 60 MB
	// at 100,000 resources): ok for those that succeeded, the others are
	// attempts (a failed write may still be in the log, with gitaso's
	// principal: it is no other writer's).
	own map[uint64][]window
	// principals are the caller names of a client's principal (nil: not
	// known, so no event is taken for gitaso's own).
	principals map[*azure.Client][]string
	// denied holds the "credential|subscription" whose log could not be
	// read for lack of permission (logged once).
	denied map[string]bool
}

type window struct {
	from, to time.Time
	ok       bool
}

// ownSeed keys own (in memory only, never stored).
var ownSeed = maphash.MakeSeed()

// ownKey is a 64-bit hash of an ARM ID, case folded as ARM compares IDs.
// Two IDs sharing a key (odds of about 1 in 10^9 at 100,000 resources)
// would at worst take an event of one for gitaso's own write of the other
// within the same seconds; the full read every FullResyncEvery periods
// still reads it.
func ownKey(armID string) uint64 {
	var h maphash.Hash
	h.SetSeed(ownSeed)
	for i := 0; i < len(armID); i++ {
		c := armID[i]
		if c >= utf8.RuneSelf {
			h.Reset()
			_, _ = h.WriteString(strings.ToLower(armID))
			return h.Sum64()
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		_ = h.WriteByte(c)
	}
	return h.Sum64()
}

func (a *activityState) init() {
	if a.sinceFull == nil {
		a.sinceFull, a.own = map[string]int{}, map[uint64][]window{}
		a.principals, a.denied = map[*azure.Client][]string{}, map[string]bool{}
	}
}

// noteOwnWrites remembers the writes an apply made: applied or deleted
// ones as gitaso's state (their events are not read back), failed writes
// as attempts only (a failed write is not gitaso's state, its event is
// read, but it is not another writer's).
func (r *Reconciler) noteOwnWrites(res *executor.Result) {
	if res == nil {
		return
	}
	a := &r.activity
	a.mu.Lock()
	defer a.mu.Unlock()
	a.init()
	for _, rr := range res.Resources {
		if rr == nil || rr.Resource == nil || rr.Resource.ARMID == "" || rr.StartedAt.IsZero() {
			continue
		}
		ok := rr.Outcome == executor.Applied || rr.Outcome == executor.Deleted
		tried := rr.Outcome == executor.Failed && ((rr.Resource.Action.Writes() && !rr.Resource.NoWrite) || rr.Resource.Action == planner.Delete)
		if ok || tried {
			a.noteWrite(rr.Resource.ARMID, rr.StartedAt, rr.StartedAt.Add(rr.Duration), ok)
		}
	}
}

// noteWrite remembers one write of armID between from and to. Caller holds
// a.mu.
func (a *activityState) noteWrite(armID string, from, to time.Time, ok bool) {
	cutoff := time.Now().Add(-maxActivityWindow)
	id := ownKey(armID)
	ws := a.own[id][:0:0]
	for _, w := range a.own[id] {
		if w.to.After(cutoff) {
			ws = append(ws, w)
		}
	}
	a.own[id] = append(ws, window{from: from, to: to, ok: ok})
}

// fullEvery is how many sync periods of n pass between full reads.
func (r *Reconciler) fullEvery(n *planner.Node) int {
	if k := r.cfg.FullResyncEvery; k > 0 {
		return k
	}
	p := r.syncPeriodFor(n)
	if p <= 0 {
		return 1
	}
	return max(1, int((24*time.Hour)/p))
}

// byActivity splits the due nodes of a periodic resync into those to read
// and those the Activity Log shows unchanged since their last read. It
// records, on the nodes the log judged, whether another writer used
// gitaso's principal (unless dryRun).
func (r *Reconciler) byActivity(ctx context.Context, cf *clientsFor, due []*planner.Node, in planner.Input, dryRun bool) (read, unchanged []*planner.Node) {
	type group struct {
		cred, sub string
		nodes     []*planner.Node
	}
	var groups []*group
	byKey := map[string]*group{}
	a := &r.activity
	a.mu.Lock()
	a.init()
	r.readMu.Lock()
	now := time.Now()
	for _, n := range due {
		_, known := in.Prior[n.Key()]
		last, readBefore := r.lastRead[n.Key()]
		if !known || !readBefore || n.Subscription == "" || n.ARMID == "" ||
			a.sinceFull[n.Key()]+1 >= r.fullEvery(n) || now.Sub(last) > maxActivityWindow {
			read = append(read, n)
			continue
		}
		k := n.Credential + "|" + strings.ToLower(n.Subscription)
		g := byKey[k]
		if g == nil {
			g = &group{cred: n.Credential, sub: n.Subscription}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.nodes = append(g.nodes, n)
	}
	lastRead := func(n *planner.Node) time.Time { return r.lastRead[n.Key()] }
	r.readMu.Unlock()
	a.mu.Unlock()

	overlap := max(0, r.cfg.ActivityLogOverlap)
	others := map[string]*record.OtherWriter{} // node key → what the log showed (nil: none)
	defer func() {
		if !dryRun {
			r.recordOtherWriters(ctx, others, in.Prior)
		}
	}()
	for _, g := range groups {
		cli, err := cf.client(g.cred)
		if err != nil {
			read = append(read, g.nodes...)
			continue
		}
		r.readMu.Lock()
		from := now
		since := make([]time.Time, len(g.nodes))
		for i, n := range g.nodes {
			since[i] = lastRead(n).Add(-overlap)
			if since[i].Before(from) {
				from = since[i]
			}
		}
		r.readMu.Unlock()
		events, err := cli.ActivityLog(ctx, g.sub, from, time.Now())
		if err != nil {
			r.activityLogFailed(ctx, g.cred, g.sub, err)
			read = append(read, g.nodes...)
			continue
		}
		mine := r.principalOf(ctx, cli)
		// changed: the latest change per lower-cased resource ID; other:
		// the writes of another writer with gitaso's principal.
		changed := map[string]time.Time{}
		other := map[string]*record.OtherWriter{}
		now := time.Now().UTC()
		a.mu.Lock()
		for _, ev := range events {
			if !ev.Changes() || ev.ResourceID == "" {
				continue
			}
			id := strings.ToLower(ev.ResourceID)
			if a.isOwn(ownKey(ev.ResourceID), ev, mine) {
				continue
			}
			if a.byOtherWriter(ownKey(ev.ResourceID), ev, mine, r.started, max(0, r.cfg.ActivityLogSkew)) {
				o := other[id]
				if o == nil {
					o = &record.OtherWriter{Caller: ev.Caller, SeenAt: now}
					other[id] = o
				}
				o.Writes++
				if ev.Time.After(o.At) {
					o.At, o.Operation = ev.Time.UTC(), ev.Operation
				}
			}
			if t, ok := changed[id]; !ok || ev.Time.After(t) {
				changed[id] = ev.Time
			}
		}
		a.mu.Unlock()
		for i, n := range g.nodes {
			others[n.Key()] = other[strings.ToLower(n.ARMID)]
			if changedSince(changed, strings.ToLower(n.ARMID), since[i]) {
				read = append(read, n)
			} else {
				unchanged = append(unchanged, n)
			}
		}
		r.log.DebugContext(ctx, "activity log read", "credential", g.cred, "subscription", g.sub,
			"events", len(events), "changed", len(changed), "resources", len(g.nodes))
	}
	return read, unchanged
}

// changedSince reports whether id or one of its ancestors changed at or
// after since.
func changedSince(changed map[string]time.Time, id string, since time.Time) bool {
	if len(changed) == 0 {
		return false
	}
	for p := id; p != ""; {
		if t, ok := changed[p]; ok && !t.Before(since) {
			return true
		}
		i := strings.LastIndexByte(p, '/')
		if i <= 0 {
			break
		}
		p = p[:i]
	}
	return false
}

// isOwn reports whether ev is a write gitaso made and recorded: its caller
// is the credential's principal and it falls within one of gitaso's writes
// of that resource. Caller holds a.mu.
func (a *activityState) isOwn(id uint64, ev azure.ActivityEvent, mine []string) bool {
	if ev.Caller == "" || len(mine) == 0 {
		return false
	}
	me := false
	for _, m := range mine {
		if strings.EqualFold(m, ev.Caller) {
			me = true
			break
		}
	}
	if !me {
		return false
	}
	for _, w := range a.own[id] {
		if w.ok && !ev.Time.Before(w.from) && !ev.Time.After(w.to) {
			return true
		}
	}
	return false
}

// byOtherWriter reports whether ev is a write that succeeded with gitaso's
// own principal (mine), after this process started, outside every write
// this gitaso attempted of that resource, give or take skew: another writer
// used gitaso's identity. Writes before the start are left out (the windows
// of the previous process are not known). Caller holds a.mu.
func (a *activityState) byOtherWriter(id uint64, ev azure.ActivityEvent, mine []string, started time.Time, skew time.Duration) bool {
	if !strings.EqualFold(ev.Status, "Succeeded") || ev.Time.Before(started.Add(skew)) ||
		!slices.ContainsFunc(mine, func(m string) bool { return strings.EqualFold(m, ev.Caller) }) {
		return false
	}
	for _, w := range a.own[id] {
		if !ev.Time.Before(w.from.Add(-skew)) && !ev.Time.After(w.to.Add(skew)) {
			return false
		}
	}
	return true
}

// recordOtherWriters records what the log showed of other writers on the
// resources it judged (others: node key → the writes, nil for none): a
// warning per resource written by another writer, the resource's
// OtherWriter set or cleared in state and in prior (which the run records
// from), and the count of such resources for the metrics.
func (r *Reconciler) recordOtherWriters(ctx context.Context, others map[string]*record.OtherWriter, prior map[string]record.Resource) {
	changed := map[string]record.Resource{}
	for key, o := range others {
		res, ok := prior[key]
		if !ok || (o == nil && res.OtherWriter == nil) {
			continue
		}
		if o != nil {
			r.log.WarnContext(ctx, "another writer uses gitaso's principal: a write to a managed resource that this gitaso did not make "+
				"(another gitaso with its own state file, or gitaso's credential used elsewhere); gitaso corrects it as drift, the other writer may undo it again",
				"resource", key, "armId", res.ARMID, "caller", o.Caller, "operation", o.Operation, "at", o.At, "writes", o.Writes)
		}
		res.OtherWriter = o
		res.UpdatedAt = time.Now().UTC()
		prior[key] = res
		changed[key] = res
	}
	if len(changed) > 0 && r.db != nil {
		err := r.db.Update(func(w *state.Writer) error {
			for key, res := range changed {
				cur, ok, err := w.Resource(key)
				if err != nil || !ok {
					continue // gone meanwhile: nothing to mark
				}
				cur.OtherWriter, cur.UpdatedAt = res.OtherWriter, res.UpdatedAt
				if err := w.PutResource(cur); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			r.log.ErrorContext(ctx, "record the other writers seen in the Activity Log", "error", err)
		}
	}
	r.observeOtherWriters(prior)
}

// principalOf returns the caller names of cli's principal, asked once per
// client (none when they cannot be known: every event is then read).
func (r *Reconciler) principalOf(ctx context.Context, cli *azure.Client) []string {
	a := &r.activity
	a.mu.Lock()
	p, ok := a.principals[cli]
	a.mu.Unlock()
	if ok {
		return p
	}
	p, err := r.clients.Principal(ctx, cli.Credential())
	if err != nil {
		r.log.InfoContext(ctx, "the credential's principal is unknown; its own writes in the Activity Log are read back too", "error", err)
		p = nil
	}
	a.mu.Lock()
	a.principals[cli] = p
	a.mu.Unlock()
	return p
}

// activityLogFailed logs a failed Activity Log query: once per credential
// and subscription when the principal may not read it, else every time.
func (r *Reconciler) activityLogFailed(ctx context.Context, cred, sub string, err error) {
	var ae *azure.ARMError
	if errors.As(err, &ae) && (ae.StatusCode == http.StatusForbidden || ae.StatusCode == http.StatusUnauthorized) {
		a := &r.activity
		a.mu.Lock()
		first := !a.denied[cred+"|"+sub]
		a.denied[cred+"|"+sub] = true
		a.mu.Unlock()
		if first {
			r.log.WarnContext(ctx, "the Activity Log cannot be read (grant Microsoft.Insights/eventtypes/values/read, e.g. Reader); every resync reads every due resource",
				"credential", cred, "subscription", sub, "error", err)
		}
		return
	}
	r.log.WarnContext(ctx, "activity log query failed; reading every due resource", "credential", cred, "subscription", sub, "error", err)
}

// countReads records, after a resync, which nodes were read in full and
// which the log judged unchanged.
func (r *Reconciler) countReads(read, unchanged []*planner.Node) {
	a := &r.activity
	a.mu.Lock()
	defer a.mu.Unlock()
	a.init()
	for _, n := range read {
		delete(a.sinceFull, n.Key())
	}
	for _, n := range unchanged {
		a.sinceFull[n.Key()]++
	}
}
