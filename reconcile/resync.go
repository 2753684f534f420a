package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
)

// Reading Azure back (refresh) at low cost.
//
// ASO re-PUTs every resource once per sync period (1,000 resources at 1 h are
// 1,000 writes an hour). gitaso reads in bulk instead and writes only where a
// field the manifest sets differs:
//
//  1. one Resource Graph query per credential and 500 IDs (pages of 1,000
//     rows), plus one on ResourceContainers for resource groups;
//  2. the plan is made against those rows; every resource the rows say has
//     drifted, and every resource the graph did not return (child types the
//     graph does not index, or resources that are gone), is a suspect;
//  3. proxy resources, which the graph does not index (queues, containers,
//     role assignments), are read with one LIST per collection that holds
//     two or more of them;
//  4. suspects are confirmed with a targeted GET (the graph lags behind ARM)
//     and the final plan is made against what the GETs returned.
//
// When the graph cannot be queried (no permission, a cloud without it) every
// due resource is read with a GET.

const graphBatch = 500

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

// nextResync returns when the next node becomes due, zero if none will.
func (r *Reconciler) nextResync(g *planner.Graph) time.Time {
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

// observe reads Azure for the due nodes and returns a final plan.
// A dry run (gitaso plan) does not count as a read: the next run reads
// again.
func (r *Reconciler) observe(ctx context.Context, g *planner.Graph, in planner.Input, all, dryRun bool) (*planner.Plan, error) {
	now := time.Now()
	var due []*planner.Node
	for _, n := range g.Nodes {
		if r.due(n, in, now, all) {
			due = append(due, n)
		}
	}
	if len(due) == 0 {
		return g.Plan(in)
	}
	cf := &clientsFor{r: r, g: g}
	rows, missing := r.bulkRead(ctx, cf, due)
	// Proxy resources (queues, containers, role assignments, ...) are not
	// in the graph: read them a collection at a time.
	listed, missing := r.listCollections(ctx, cf, missing)
	in.Observed = planner.Observed{}
	for id, b := range rows {
		in.Observed[id] = b
	}
	for id, b := range listed {
		in.Observed[id] = b
	}
	suspects := missing
	if len(in.Observed) > 0 {
		p, err := g.Plan(in)
		if err != nil {
			return nil, err
		}
		for _, res := range p.Resources {
			if res.Action == planner.Drift || res.Action == planner.Adopt {
				// A collection list is as fresh as a GET; graph rows lag.
				if n := g.Node(res.Key()); n != nil && listed[strings.ToLower(n.ARMID)] == nil {
					suspects = append(suspects, n)
				}
			}
		}
	}
	confirmed := r.readEach(ctx, cf, suspects)
	for id, b := range listed {
		rows[id] = b
	}
	observed := planner.Observed{}
	for id, b := range rows {
		observed[id] = b
	}
	for id, b := range confirmed {
		observed[id] = b
	}
	// Suspects whose GET failed (not a 404) are not judged this time.
	for _, n := range suspects {
		if _, ok := confirmed[strings.ToLower(n.ARMID)]; !ok {
			delete(observed, strings.ToLower(n.ARMID))
		}
	}
	r.readMu.Lock()
	for _, n := range due {
		if dryRun {
			break
		}
		if _, ok := observed[strings.ToLower(n.ARMID)]; ok {
			r.lastRead[n.Key()] = now
		}
	}
	r.readMu.Unlock()
	in.Observed = observed
	return g.Plan(in)
}

// bulkRead queries Resource Graph for the nodes, per credential. It returns
// the rows found and the nodes that need a GET (not returned, or the query
// failed).
func (r *Reconciler) bulkRead(ctx context.Context, cf *clientsFor, nodes []*planner.Node) (planner.Observed, []*planner.Node) {
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
		found, err := graphRows(ctx, cli, ns)
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

func graphRows(ctx context.Context, cli *azure.Client, nodes []*planner.Node) (map[string]json.RawMessage, error) {
	var groups, others []*planner.Node
	subs := map[string]bool{}
	for _, n := range nodes {
		if n.Kind.Scope == "location" {
			groups = append(groups, n)
		} else {
			others = append(others, n)
		}
		subs[n.Subscription] = true
	}
	var subList []string
	for s := range subs {
		subList = append(subList, s)
	}
	sort.Strings(subList)
	out := map[string]json.RawMessage{}
	run := func(table string, ns []*planner.Node) error {
		for i := 0; i < len(ns); i += graphBatch {
			end := min(i+graphBatch, len(ns))
			ids := make([]string, 0, end-i)
			for _, n := range ns[i:end] {
				ids = append(ids, "'"+strings.ReplaceAll(n.ARMID, "'", "")+"'")
			}
			q := table + " | where id in~ (" + strings.Join(ids, ", ") + ")"
			rs, err := cli.Query(ctx, q, subList)
			if err != nil {
				return err
			}
			for _, row := range rs {
				id, _ := row["id"].(string)
				if id == "" {
					continue
				}
				b, err := json.Marshal(row)
				if err != nil {
					return fmt.Errorf("encode graph row %s: %w", id, err)
				}
				out[strings.ToLower(id)] = b
			}
		}
		return nil
	}
	if err := run("Resources", others); err != nil {
		return nil, err
	}
	if err := run("ResourceContainers", groups); err != nil {
		return nil, err
	}
	return out, nil
}

// listCollections reads proxy resources that the graph does not index with
// one LIST of each collection holding two or more of them (queues of a
// namespace, containers of a blob service). It returns the resources found
// and the nodes still to be read one by one (a collection of one, a failed
// list, or a resource the list does not have).
func (r *Reconciler) listCollections(ctx context.Context, cf *clientsFor, nodes []*planner.Node) (planner.Observed, []*planner.Node) {
	type coll struct {
		path, api, cred string
		nodes           []*planner.Node
	}
	groups := map[string]*coll{}
	var order []string
	for _, n := range nodes {
		i := strings.LastIndex(n.ARMID, "/")
		if i <= 0 || n.Kind.Scope == "location" {
			continue
		}
		path := n.ARMID[:i]
		k := strings.ToLower(path) + "|" + n.Kind.APIVersion + "|" + n.Credential
		c := groups[k]
		if c == nil {
			c = &coll{path: path, api: n.Kind.APIVersion, cred: n.Credential}
			groups[k] = c
			order = append(order, k)
		}
		c.nodes = append(c.nodes, n)
	}
	found := planner.Observed{}
	var mu sync.Mutex
	var rest []*planner.Node
	sem := make(chan struct{}, r.cfg.ReadParallelism)
	var wg sync.WaitGroup
	for _, n := range nodes {
		if i := strings.LastIndex(n.ARMID, "/"); i <= 0 || n.Kind.Scope == "location" {
			rest = append(rest, n)
		}
	}
	for _, k := range order {
		c := groups[k]
		if len(c.nodes) < 2 {
			rest = append(rest, c.nodes...)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var items []json.RawMessage
			cli, err := cf.client(c.cred)
			if err == nil {
				items, err = cli.List(ctx, c.path, c.api)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.log.WarnContext(ctx, "listing a collection failed; reading its resources one by one", "collection", c.path, "error", err)
				rest = append(rest, c.nodes...)
				return
			}
			byID := map[string]json.RawMessage{}
			for _, it := range items {
				var h struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(it, &h) == nil && h.ID != "" {
					byID[strings.ToLower(h.ID)] = it
				}
			}
			for _, n := range c.nodes {
				if b, ok := byID[strings.ToLower(n.ARMID)]; ok {
					found[strings.ToLower(n.ARMID)] = b
				} else {
					rest = append(rest, n) // gone, or not listed: a GET tells
				}
			}
		}()
	}
	wg.Wait()
	return found, rest
}

// readEach GETs the nodes: the body, nil for 404; failed reads are absent.
func (r *Reconciler) readEach(ctx context.Context, cf *clientsFor, nodes []*planner.Node) planner.Observed {
	obs := planner.Observed{}
	seen := map[string]bool{}
	var mu sync.Mutex
	sem := make(chan struct{}, r.cfg.ReadParallelism)
	var wg sync.WaitGroup
	for _, n := range nodes {
		id := strings.ToLower(n.ARMID)
		if seen[id] {
			continue
		}
		seen[id] = true
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			cli, err := cf.client(n.Credential)
			if err != nil {
				return
			}
			body, err := cli.Get(ctx, n.ARMID, n.Kind.APIVersion)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				obs[id] = body
			case errors.Is(err, azure.ErrNotFound):
				obs[id] = nil
			default:
				r.log.WarnContext(ctx, "refresh read failed", "armId", n.ARMID, "error", err)
			}
		}()
	}
	wg.Wait()
	return obs
}
