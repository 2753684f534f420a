package emulator

import (
	"net/http"
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
// lock. Subscription tags are not kept: at subscription scope GET answers no tags and writes answer 400.

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
	if sp.Kind == pathResource && sp.Type == typeSubscription {
		if verb == "read" {
			answer(nil)
			return
		}
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidRequestContent", "The emulator does not keep subscription tags."))
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	res := e.store.get(strings.ToLower(scope))
	if res == nil {
		e.writeErr(w, info, e.notFound(sp))
		return
	}
	body, err := res.decode()
	if err != nil {
		e.writeErr(w, info, newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err))
		return
	}
	tags, _ := body["tags"].(map[string]any)
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
	body["tags"] = tags
	res.body = mustJSON(body)
	e.markDirty()
	answer(tags)
}
