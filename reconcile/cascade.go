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
//   - per resource group holding a deleted resource (or deleted itself): the
//     role assignments and management locks that apply there (GET
//     {group}/providers/Microsoft.Authorization/roleAssignments and .../locks,
//     one each per group however many of its resources are deleted). ARM
//     answers with those at, above and below the group; the ones at or below
//     a deleted resource's ID are the deleted resource's extension
//     resources: ARM deletes a role assignment with its scope (the access it
//     granted is lost), and a lock refuses the deletion (ScopeLocked). Role
//     assignments gitaso manages are not reported. Diagnostic settings are
//     not read: Azure does not delete them with their resource (they stay,
//     and apply again to a resource re-created under the same ID).
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

// extensionTypes are the extension resources read at the resource group of
// a deleted resource: collection below {group}/providers/ and api-version.
var extensionTypes = []struct{ collection, apiVersion string }{
	{"Microsoft.Authorization/roleAssignments", "2022-04-01"},
	{"Microsoft.Authorization/locks", "2016-09-01"},
}

// listing is one collection to read for the unmanaged-children check.
type listing struct {
	parentKey  string // the deleted resource it is read for
	credential string
	path       string
	apiVersion string
	child      *childType // nil for a resource group's /resources
	// scopes are, for a list of extension resources at a resource group,
	// the deleted resources of that group: an item at or below one of them
	// is its.
	scopes []deletedScope
}

// deletedScope is a deleted resource whose extension resources are looked
// for.
type deletedScope struct {
	key   string // its ID, as unmanagedChildren reports it
	lower string // its ARM ID, lower-cased
}

// owner returns the deleted resource an extension resource's ID lies at or
// below ("" when none).
func (l listing) owner(lowerID string) string {
	for _, s := range l.scopes {
		if strings.HasPrefix(lowerID, s.lower+"/") {
			return s.key
		}
	}
	return ""
}

// resourceGroupOf returns the resource group part of an ARM ID
// ("/subscriptions/s/resourceGroups/g"), "" when the ID is not in one.
func resourceGroupOf(id string) string {
	segs := strings.SplitN(strings.TrimPrefix(id, "/"), "/", 5)
	if len(segs) < 4 || !strings.EqualFold(segs[0], "subscriptions") || !strings.EqualFold(segs[2], "resourceGroups") {
		return ""
	}
	return "/" + strings.Join(segs[:4], "/")
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
	// The extension resources of the deleted resources, a list per group.
	extByGroup := map[string]*listing{}
	var groups []string
	for _, d := range p.Resources {
		if d.Action != planner.Delete || d.DeletedWith != "" || d.DeleteUnmanaged {
			continue
		}
		lower := strings.ToLower(d.ARMID)
		if d.Kind == "ResourceGroup" {
			add(listing{parentKey: d.ID(), credential: d.Credential, path: d.ARMID + "/resources", apiVersion: "2021-04-01"})
		}
		if rg := resourceGroupOf(d.ARMID); rg != "" {
			k := strings.ToLower(rg)
			if extByGroup[k] == nil {
				extByGroup[k] = &listing{credential: d.Credential, path: rg}
				groups = append(groups, k)
			}
			extByGroup[k].scopes = append(extByGroup[k].scopes, deletedScope{key: d.ID(), lower: lower})
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
	for _, k := range groups {
		g := extByGroup[k]
		// The deepest scope first: an item is its nearest deleted ancestor's.
		sort.Slice(g.scopes, func(i, j int) bool { return len(g.scopes[i].lower) > len(g.scopes[j].lower) })
		for _, t := range extensionTypes {
			add(listing{credential: g.credential, path: g.path + "/providers/" + t.collection, apiVersion: t.apiVersion, scopes: g.scopes})
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
	// unmanaged returns what a listing holds that gitaso does not manage
	// and a deletion would take with it, by deleted resource.
	unmanaged := func(l listing, ids []string) map[string][]string {
		var out map[string][]string
		for _, id := range ids {
			lid := strings.ToLower(id)
			if known[lid] || l.child != nil && isDefaultChild(l.child.segment, id) {
				continue
			}
			parent := l.parentKey
			if l.scopes != nil {
				if parent = l.owner(lid); parent == "" {
					continue // above the deleted resources, or beside them
				}
			}
			if out == nil {
				out = map[string][]string{}
			}
			out[parent] = append(out[parent], id)
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
			for parent, u := range unmanaged(l, ids) {
				found[parent] = append(found[parent], u...)
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
