package azure

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
)

// Refreshing: reading Azure back to compare it with what gitaso applied, at
// low cost. ASO re-PUTs every resource once per sync period (1,000
// resources at 1 h are 1,000 writes an hour); gitaso reads in bulk instead:
//
//  1. RefreshFromGraph: one Resource Graph query per client and 500 IDs
//     (Resources, and ResourceContainers for resource groups);
//  2. RefreshCollections: proxy resources the graph does not index (queues,
//     containers, role assignments) with one LIST per collection holding two
//     or more of them;
//  3. RefreshEach: a GET per resource, for what is left and to confirm what
//     the graph (which lags behind ARM) says has drifted.
//
// Results are keyed by lower-cased ARM ID. The caller (reconcile) decides
// what is due and plans against the results.

// RefreshTarget is one resource to read back.
type RefreshTarget struct {
	ARMID      string
	APIVersion string
	// Container marks a resource group (ResourceContainers in the graph).
	Container    bool
	Subscription string
	// Client reads it (the resource's credential); nil when none could be
	// made: the resource is left unread.
	Client *Client
}

// refreshGraphBatch is how many IDs one Resource Graph query asks for.
const refreshGraphBatch = 500

// RefreshFromGraph asks Resource Graph for the targets with cli: the rows
// found, by lower-cased ARM ID. A target missing from the result is either
// gone or of a type the graph does not index.
func RefreshFromGraph(ctx context.Context, cli *Client, ts []RefreshTarget) (map[string]json.RawMessage, error) {
	var containers, others []RefreshTarget
	subs := map[string]bool{}
	for _, t := range ts {
		if t.Container {
			containers = append(containers, t)
		} else {
			others = append(others, t)
		}
		subs[t.Subscription] = true
	}
	subList := make([]string, 0, len(subs))
	for s := range subs {
		subList = append(subList, s)
	}
	sort.Strings(subList)
	out := map[string]json.RawMessage{}
	run := func(table string, ts []RefreshTarget) error {
		for i := 0; i < len(ts); i += refreshGraphBatch {
			end := min(i+refreshGraphBatch, len(ts))
			ids := make([]string, 0, end-i)
			for _, t := range ts[i:end] {
				ids = append(ids, "'"+strings.ReplaceAll(t.ARMID, "'", "")+"'")
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
	if err := run("ResourceContainers", containers); err != nil {
		return nil, err
	}
	return out, nil
}

// RefreshCollections reads the targets with one LIST of each collection
// holding two or more of them (at most parallel at a time). It returns the
// resources found (nil for those of a collection whose parent does not
// exist: a LIST answered 404) and the targets still to be read one by one
// (a collection of one, a failed list, or a resource the list does not have).
func RefreshCollections(ctx context.Context, ts []RefreshTarget, parallel int, log *slog.Logger) (map[string]json.RawMessage, []RefreshTarget) {
	type coll struct {
		path, api string
		cli       *Client
		ts        []RefreshTarget
	}
	groups := map[string]*coll{}
	var order []string
	var rest []RefreshTarget
	for _, t := range ts {
		i := strings.LastIndex(t.ARMID, "/")
		if i <= 0 || t.Container || t.Client == nil {
			rest = append(rest, t)
			continue
		}
		path := t.ARMID[:i]
		k := fmt.Sprintf("%s|%s|%p", strings.ToLower(path), t.APIVersion, t.Client)
		c := groups[k]
		if c == nil {
			c = &coll{path: path, api: t.APIVersion, cli: t.Client}
			groups[k] = c
			order = append(order, k)
		}
		c.ts = append(c.ts, t)
	}
	found := map[string]json.RawMessage{}
	var mu sync.Mutex
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, k := range order {
		c := groups[k]
		if len(c.ts) < 2 {
			mu.Lock() // the lists already started append to rest too
			rest = append(rest, c.ts...)
			mu.Unlock()
			continue
		}
		// The slot is taken before the goroutine starts: thousands of
		// goroutines waiting for one cost their stacks (issue 12 memory).
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			items, err := c.cli.List(ctx, c.path, c.api)
			mu.Lock()
			defer mu.Unlock()
			if errors.Is(err, ErrNotFound) {
				// The collection's parent does not exist (ResourceGroupNotFound,
				// ParentResourceNotFound): neither do its resources. No GET
				// one by one (a first apply into an empty subscription).
				for _, t := range c.ts {
					found[strings.ToLower(t.ARMID)] = nil
				}
				return
			}
			if err != nil {
				log.WarnContext(ctx, "listing a collection failed; reading its resources one by one", "collection", c.path, "error", err)
				rest = append(rest, c.ts...)
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
			for _, t := range c.ts {
				if b, ok := byID[strings.ToLower(t.ARMID)]; ok {
					found[strings.ToLower(t.ARMID)] = b
				} else {
					rest = append(rest, t) // gone, or not listed: a GET tells
				}
			}
		}()
	}
	wg.Wait()
	return found, rest
}

// RefreshEach GETs the targets (at most parallel at a time): the body, or
// nil for a resource that does not exist; failed reads are absent.
func RefreshEach(ctx context.Context, ts []RefreshTarget, parallel int, log *slog.Logger) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	seen := map[string]bool{}
	var mu sync.Mutex
	sem := make(chan struct{}, max(parallel, 1))
	var wg sync.WaitGroup
	for _, t := range ts {
		id := strings.ToLower(t.ARMID)
		if seen[id] || t.Client == nil {
			continue
		}
		seen[id] = true
		sem <- struct{}{} // before the goroutine starts, as in RefreshCollections
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			body, err := t.Client.Get(ctx, t.ARMID, t.APIVersion)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				out[id] = body
			case errors.Is(err, ErrNotFound):
				out[id] = nil
			default:
				log.WarnContext(ctx, "refresh read failed", "armId", t.ARMID, "error", err)
			}
		}()
	}
	wg.Wait()
	return out
}
