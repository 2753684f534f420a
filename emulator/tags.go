package emulator

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// The Microsoft.Resources/tags/default extension ({scope}/providers/Microsoft.Resources/tags/default), which
// reads and writes the tags of the resource or resource group at scope without a PUT of it (`az tag`):
//
//   - GET answers {id, name: "default", type: "Microsoft.Resources/tags", properties: {tags}};
//   - PUT {properties: {tags}} replaces the tags; PATCH {operation: Merge|Replace|Delete, properties: {tags}}
//     merges them, replaces them, or removes the given names (with the given values, when a value is given);
//   - DELETE removes every tag.
//
// Writes need Microsoft.Resources/tags/write (Tag Contributor, Contributor, Owner) and are refused under a ReadOnly
// lock. A subscription's tags are kept with it (GET /subscriptions/{id} shows them).
//
// GET /subscriptions/{id}/tagNames (`az tag list`) lists the tag names in use on the subscription's resource groups
// and resources, each with its values and counts.

const tagsType = "Microsoft.Resources/tags"

func (e *Emulator) serveTags(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) {
	scope := p.Parent
	verb := map[string]string{http.MethodGet: "read", http.MethodHead: "read", http.MethodPut: "write", http.MethodPatch: "write", http.MethodDelete: "delete"}[r.Method]
	if verb == "" {
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed.")
		return
	}
	if !strings.EqualFold(p.Name, "default") {
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidTagsResourceName", "The tags resource name '%s' is invalid. It must be 'default'.", p.Name))
		return
	}
	if !e.authorize(w, c, "Microsoft.Resources/tags/"+verb, scopeOrRoot(scope), info) {
		return
	}
	if verb != "read" && e.refuseLocked(w, r, armPath{Kind: pathResource, ID: scope, Type: tagsType}, info) {
		return
	}
	var in struct {
		Operation  string `json:"operation"`
		Properties struct {
			Tags map[string]any `json:"tags"`
		} `json:"properties"`
	}
	if (verb == "write") && !e.decodeBody(w, r, info, &in) {
		return
	}
	id := scope + "/providers/Microsoft.Resources/tags/default"
	answer := func(tags map[string]any) {
		if tags == nil {
			tags = map[string]any{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "name": "default", "type": tagsType, "properties": map[string]any{"tags": tags}})
	}
	sp := parseARMPath(scope)
	e.mu.Lock()
	defer e.mu.Unlock()
	var sub *subscription
	var res *resource
	var body map[string]any
	var tags map[string]any
	if sp.Kind == pathResource && sp.Type == typeSubscription {
		if sub = e.subs[strings.ToLower(sp.Sub)]; sub == nil {
			e.writeErr(w, info, newARMError(http.StatusNotFound, "SubscriptionNotFound", "The subscription '%s' could not be found.", sp.Sub))
			return
		}
		tags = maps.Clone(sub.Tags)
	} else {
		if res = e.store.get(strings.ToLower(scope)); res == nil {
			e.writeErr(w, info, e.notFound(sp))
			return
		}
		var err error
		if body, err = res.decode(); err != nil {
			e.writeErr(w, info, newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err))
			return
		}
		tags, _ = body["tags"].(map[string]any)
	}
	if tags == nil {
		tags = map[string]any{}
	}
	switch {
	case verb == "read":
		answer(tags)
		return
	case verb == "delete":
		tags = map[string]any{}
	case r.Method == http.MethodPut:
		tags = in.Properties.Tags
	default:
		switch strings.ToLower(in.Operation) {
		case "merge":
			for k, v := range in.Properties.Tags {
				tags[k] = v
			}
		case "replace":
			tags = in.Properties.Tags
		case "delete":
			for k, v := range in.Properties.Tags {
				if s, _ := v.(string); s == "" || tags[k] == v {
					delete(tags, k)
				}
			}
		default:
			e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidTagOperation", "The tag operation '%s' is invalid. It must be Merge, Replace or Delete.", in.Operation))
			return
		}
	}
	if tags == nil {
		tags = map[string]any{}
	}
	if sub != nil {
		sub.Tags = tags
	} else {
		body["tags"] = tags
		res.body = mustJSON(body)
	}
	e.markDirty()
	answer(tags)
}

// serveTagNames answers GET /subscriptions/{id}/tagNames from the tags in use.
func (e *Emulator) serveTagNames(w http.ResponseWriter, p armPath, c *accessClaims, info *reqInfo) {
	if !e.authorize(w, c, "Microsoft.Resources/subscriptions/tagNames/read", p.Parent, info) {
		return
	}
	type tagName struct {
		name   string
		count  int
		values map[string]int
		order  []string
	}
	byName := map[string]*tagName{}
	var order []string
	e.mu.RLock()
	for _, x := range e.store.under(strings.ToLower(p.Parent)) {
		if x.typeKey != rgTypeKey && !listedAsResource(x) {
			continue
		}
		var b struct {
			Tags map[string]string `json:"tags"`
		}
		if json.Unmarshal(x.body, &b) != nil {
			continue
		}
		for k, v := range b.Tags {
			tn := byName[strings.ToLower(k)]
			if tn == nil {
				tn = &tagName{name: k, values: map[string]int{}}
				byName[strings.ToLower(k)] = tn
				order = append(order, strings.ToLower(k))
			}
			tn.count++
			if tn.values[v] == 0 {
				tn.order = append(tn.order, v)
			}
			tn.values[v]++
		}
	}
	e.mu.RUnlock()
	slices.Sort(order)
	values := []any{}
	for _, k := range order {
		tn := byName[k]
		id := p.Parent + "/tagNames/" + tn.name
		var vals []any
		slices.Sort(tn.order)
		for _, v := range tn.order {
			vals = append(vals, map[string]any{"id": id + "/tagValues/" + v, "tagValue": v, "count": map[string]any{"type": "Total", "value": tn.values[v]}})
		}
		values = append(values, map[string]any{"id": id, "tagName": tn.name, "count": map[string]any{"type": "Total", "value": tn.count}, "values": vals})
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": values})
}
