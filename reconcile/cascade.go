package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// Deleting a parent deletes its contents: ARM removes every resource in a
// resource group with it, and every child of a resource (a namespace's
// queues, a server's databases). Before such a deletion gitaso reads what
// the parent holds; anything that is not in gitaso's state (and not declared
// in Git) holds the deletion, unless the parent's manifest opted in with
// planner.AnnotationDeleteUnmanaged.
//
// What is read, per resource the plan deletes with a DELETE:
//   - a resource group: its resources (GET .../resources, the tracked
//     resources ARM lists, nested ones included);
//   - the deleted resource and every managed resource inside it: the child
//     collections of the ASO kinds whose ARM type is directly below its
//     own (singletons such as blobServices/default are entered, not
//     reported, since ARM creates them).
//
// Children ARM creates with their parent are not reported (defaultChildren).

// defaultChildren are children ARM creates with their parent, by lower-cased
// "collection/name" or "collection/*" for a whole collection of settings.
var defaultChildren = map[string]bool{
	"authorizationrules/rootmanagesharedaccesskey": true, // Service Bus, Event Hubs, Relay, Notification Hubs namespaces
	"consumergroups/$default":                      true, // an event hub's default consumer group
	"databases/master":                             true, // SQL server
	"databases/postgres":                           true, // PostgreSQL flexible server
	"databases/azure_maintenance":                  true,
	"databases/azure_sys":                          true,
	"databases/information_schema":                 true, // MySQL flexible server
	"databases/mysql":                              true,
	"databases/performance_schema":                 true,
	"databases/sys":                                true,
	"configurations/*":                             true, // server parameters, not resources
}

type childType struct {
	segment    string // the collection's name below the parent ("queues")
	apiVersion string
	singleton  string
	armType    string // lower-cased
}

var (
	childTypesOnce sync.Once
	childTypes     map[string][]childType // lower-cased parent ARM type → children
)

func childTypesOf(armType string) []childType {
	childTypesOnce.Do(func() {
		byType := map[string]childType{}
		for _, k := range aso.Kinds() {
			if k.Scope != aso.ScopeResourceGroup {
				continue
			}
			t := strings.ToLower(k.ARMType)
			i := strings.LastIndexByte(t, '/')
			if i < 0 || strings.Count(t, "/") < 2 {
				continue
			}
			c := childType{segment: k.ARMType[i+1:], apiVersion: k.APIVersion, singleton: k.Singleton, armType: t}
			if prev, ok := byType[t]; ok && prev.apiVersion >= c.apiVersion {
				continue
			}
			byType[t] = c
		}
		childTypes = map[string][]childType{}
		for t, c := range byType {
			parent := t[:strings.LastIndexByte(t, '/')]
			childTypes[parent] = append(childTypes[parent], c)
		}
		for _, cs := range childTypes {
			sort.Slice(cs, func(i, j int) bool { return cs[i].armType < cs[j].armType })
		}
	})
	return childTypes[strings.ToLower(armType)]
}

// listing is one collection to read for the unmanaged-children check.
type listing struct {
	parentKey  string // the deleted resource it is read for
	credential string
	path       string
	apiVersion string
	child      *childType // nil for a resource group's /resources
}

// unmanagedChildren returns, per deleted resource (its ID), the ARM IDs of
// resources gitaso does not manage that its deletion would take with it.
// Listings recorded by an earlier run of the revision stand in for reading
// the collection again when lc allows it (listings.go).
func (r *Reconciler) unmanagedChildren(ctx context.Context, g *planner.Graph, p *planner.Plan, prior map[string]record.Resource, lc *listingCache) (map[string][]string, error) {
	known := map[string]bool{}
	for _, pr := range prior {
		known[strings.ToLower(pr.ARMID)] = true
	}
	for _, n := range g.Nodes {
		known[strings.ToLower(n.ARMID)] = true
	}
	var todo []listing
	seen := map[string]bool{}
	add := func(l listing) {
		k := strings.ToLower(l.path)
		if !seen[k] {
			seen[k] = true
			todo = append(todo, l)
		}
	}
	var children func(parentKey, cred, id, armType string, depth int)
	children = func(parentKey, cred, id, armType string, depth int) {
		if depth > 4 {
			return
		}
		for _, c := range childTypesOf(armType) {
			if c.singleton != "" {
				children(parentKey, cred, id+"/"+c.segment+"/"+c.singleton, c.armType, depth+1)
				continue
			}
			add(listing{parentKey: parentKey, credential: cred, path: id + "/" + c.segment, apiVersion: c.apiVersion, child: &c})
		}
	}
	type priorID struct {
		lower string
		res   record.Resource
	}
	byID := make([]priorID, 0, len(prior))
	for _, pr := range prior {
		byID = append(byID, priorID{strings.ToLower(pr.ARMID), pr})
	}
	sort.Slice(byID, func(i, j int) bool { return byID[i].lower < byID[j].lower })
	for _, d := range p.Resources {
		if d.Action != planner.Delete || d.DeletedWith != "" || d.DeleteUnmanaged {
			continue
		}
		lower := strings.ToLower(d.ARMID)
		if d.Kind == "ResourceGroup" {
			add(listing{parentKey: d.ID(), credential: d.Credential, path: d.ARMID + "/resources", apiVersion: "2021-04-01"})
		}
		// The deleted resource and the managed resources inside it.
		for i := sort.Search(len(byID), func(i int) bool { return byID[i].lower >= lower }); i < len(byID) && strings.HasPrefix(byID[i].lower, lower); i++ {
			pl, pr := byID[i].lower, byID[i].res
			if pl != lower && !strings.HasPrefix(pl, lower+"/") {
				continue
			}
			k, ok := aso.Lookup(pr.Group, pr.Version, pr.Kind)
			if !ok || k.Scope != aso.ScopeResourceGroup {
				continue
			}
			children(d.ID(), d.Credential, pr.ARMID, k.ARMType, 0)
		}
	}
	if len(todo) == 0 {
		return nil, nil
	}
	cf := &clientsFor{r: r, g: g}
	var (
		mu    sync.Mutex
		found = map[string][]string{}
		errs  []error
		wg    sync.WaitGroup
		sem   = make(chan struct{}, r.cfg.ReadParallelism)
	)
	unmanaged := func(l listing, ids []string) []string {
		var out []string
		for _, id := range ids {
			if !known[strings.ToLower(id)] && (l.child == nil || !isDefaultChild(l.child.segment, id)) {
				out = append(out, id)
			}
		}
		return out
	}
	for _, l := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ids, err := lc.list(l, func(ids []string) bool { return len(unmanaged(l, ids)) == 0 },
				func() ([]string, error) { return r.listIDs(ctx, cf, l) })
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("list %s: %w", l.path, err))
				return
			}
			if u := unmanaged(l, ids); len(u) > 0 {
				found[l.parentKey] = append(found[l.parentKey], u...)
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	for k, ids := range found {
		sort.Strings(ids)
		found[k] = dedupeSorted(ids)
	}
	return found, nil
}

// listIDs lists a collection's ARM IDs. A collection that does not exist
// (its parent is gone) or that ARM cannot list (a type or api-version it
// does not offer there) has no children.
func (r *Reconciler) listIDs(ctx context.Context, cf *clientsFor, l listing) ([]string, error) {
	cli, err := cf.client(l.credential)
	if err != nil {
		return nil, err
	}
	items, err := cli.List(ctx, l.path, l.apiVersion)
	if err != nil {
		var ae *azure.ARMError
		if errors.As(err, &ae) && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusBadRequest || ae.StatusCode == http.StatusMethodNotAllowed) {
			return nil, nil
		}
		return nil, err
	}
	ids := make([]string, 0, len(items))
	for _, it := range items {
		var v struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(it, &v) == nil && v.ID != "" {
			ids = append(ids, v.ID)
		}
	}
	return ids, nil
}

func isDefaultChild(segment, id string) bool {
	seg := strings.ToLower(segment)
	name := strings.ToLower(id[strings.LastIndexByte(id, '/')+1:])
	return defaultChildren[seg+"/"+name] || defaultChildren[seg+"/*"]
}

func dedupeSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || !strings.EqualFold(v, s[i-1]) {
			out = append(out, v)
		}
	}
	return out
}
