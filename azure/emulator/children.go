package emulator

import (
	"strings"
)

// Child resources that real ARM creates or embeds on its own:
//
//   - default children: a Service Bus or Event Hubs namespace is created with its RootManageSharedAccessKey
//     authorization rule (rights Listen, Manage, Send), whose listKeys answers at once;
//   - embedded collections: a virtual network's properties.subnets, a network security group's
//     properties.securityRules and a route table's properties.routes are its child resources. A child PUT or DELETE
//     shows in the parent's GET, and a PUT of the parent makes the children exactly the ones its body lists,
//     deleting the others (which is why ASO's hooks copy Azure's collection into the parent's PUT).

// defaultChild is a child resource created with its parent.
type defaultChild struct {
	segment string // path segment of the child collection
	name    string
	props   map[string]any
}

var defaultChildren = map[string][]defaultChild{
	"microsoft.servicebus/namespaces": {{segment: "AuthorizationRules", name: "RootManageSharedAccessKey",
		props: map[string]any{"rights": []any{"Listen", "Manage", "Send"}}}},
	"microsoft.eventhub/namespaces": {{segment: "authorizationRules", name: "RootManageSharedAccessKey",
		props: map[string]any{"rights": []any{"Listen", "Manage", "Send"}}}},
}

// embeddedCollections maps a parent type to the property (and child collection segment) that lists its children.
var embeddedCollections = map[string]string{
	"microsoft.network/virtualnetworks":       "subnets",
	"microsoft.network/networksecuritygroups": "securityRules",
	"microsoft.network/routetables":           "routes",
}

// embeddedChildType returns the lower-cased child type of an embedding parent type, or "".
func embeddedChildType(parentTypeKey string) string {
	if prop := embeddedCollections[parentTypeKey]; prop != "" {
		return parentTypeKey + "/" + strings.ToLower(prop)
	}
	return ""
}

// isEmbeddedChild reports whether typeKey is listed in its parent's body.
func isEmbeddedChild(typeKey string) bool {
	i := strings.LastIndexByte(typeKey, '/')
	return i > 0 && embeddedChildType(typeKey[:i]) == typeKey
}

// removeResource removes a resource and its descendants: indexes follow, a vault is soft-deleted and a parent
// embedding a removed child is re-rendered. Caller holds e.mu (write).
func (e *Emulator) removeResource(key string) {
	parents := map[string]bool{}
	for _, r := range e.store.remove(key) {
		e.unindexResource(r)
		if r.typeKey == vaultTypeKey {
			e.softDeleteVault(r)
		}
		if isEmbeddedChild(r.typeKey) {
			parents[r.parentKey] = true
		}
	}
	for k := range parents {
		e.syncEmbedded(k)
	}
}

// createDefaultChildren stores the children real ARM creates with a new parent. Caller holds e.mu (write).
func (e *Emulator) createDefaultChildren(parent *resource) {
	for _, dc := range defaultChildren[parent.typeKey] {
		p := parseARMPath(parent.ID + "/" + dc.segment + "/" + dc.name)
		if p.Kind != pathResource || e.store.get(strings.ToLower(p.ID)) != nil {
			continue
		}
		body := map[string]any{"properties": deepCopyJSON(dc.props)}
		if parent.Location != "" {
			body["location"] = parent.Location
		}
		e.finishBody(p, body, nil, "Succeeded")
		res := newResource(p, "", mustJSON(body))
		res.state = "Succeeded"
		e.store.put(res)
	}
}

// reconcileEmbedded makes the children of an embedding parent the ones its PUT body lists (creating or replacing
// those, deleting the others), then sets the body's collection to the stored children. parentID is the parent's
// canonical ID. Caller holds e.mu (write).
func (e *Emulator) reconcileEmbedded(parentID, typeKey string, body map[string]any) {
	prop := embeddedCollections[typeKey]
	if prop == "" {
		return
	}
	childType := embeddedChildType(typeKey)
	parentKey := strings.ToLower(parentID)
	props := ensureObject(body, "properties")
	keep := map[string]bool{}
	for _, item := range asSlice(props[prop]) {
		m, _ := item.(map[string]any)
		name := getString(m, "name")
		if name == "" {
			continue
		}
		p := parseARMPath(parentID + "/" + prop + "/" + name)
		if p.Kind != pathResource {
			continue
		}
		key := strings.ToLower(p.ID)
		keep[key] = true
		var old map[string]any
		if existing := e.store.get(key); existing != nil {
			old, _ = existing.decode()
			p.ID, p.Type = existing.ID, existing.Type
		}
		cp, _ := m["properties"].(map[string]any)
		child := map[string]any{"properties": deepCopyJSON(cp)}
		e.finishBody(p, child, old, "Succeeded")
		res := newResource(p, "", mustJSON(child))
		res.state = "Succeeded"
		e.store.put(res)
	}
	for _, c := range e.store.childrenOf(parentKey, childType) {
		if !keep[c.key] {
			for _, r := range e.store.remove(c.key) {
				e.unindexResource(r)
			}
		}
	}
	props[prop] = e.renderEmbedded(parentKey, childType)
}

// renderEmbedded lists the children of parentKey as ARM embeds them in the parent. Caller holds e.mu.
func (e *Emulator) renderEmbedded(parentKey, childType string) []any {
	out := []any{}
	for _, c := range e.store.childrenOf(parentKey, childType) {
		m, err := c.decode()
		if err != nil {
			continue
		}
		item := map[string]any{"name": c.Name, "id": c.ID, "type": c.Type}
		if p, ok := m["properties"]; ok {
			item["properties"] = p
		}
		if et, ok := m["etag"]; ok {
			item["etag"] = et
		}
		out = append(out, item)
	}
	return out
}

// syncEmbedded rewrites the embedded collection of a stored parent from its children. Caller holds e.mu (write).
func (e *Emulator) syncEmbedded(parentKey string) {
	parent := e.store.get(parentKey)
	if parent == nil {
		return
	}
	prop := embeddedCollections[parent.typeKey]
	if prop == "" {
		return
	}
	m, err := parent.decode()
	if err != nil {
		return
	}
	ensureObject(m, "properties")[prop] = e.renderEmbedded(parentKey, embeddedChildType(parent.typeKey))
	parent.body = mustJSON(m)
	e.markDirty()
}

// listedAsResource reports whether ARM lists a resource in /resources and Resource Graph's Resources table: tracked
// resources (top-level ones and the few tracked nested types), not resource groups, proxy children (subnets,
// authorization rules, ...), role assignments or other extension resources.
func listedAsResource(x *resource) bool {
	switch {
	case x.typeKey == rgTypeKey, strings.HasPrefix(x.typeKey, "microsoft.authorization/"):
		return false
	case typeDepth(x.typeKey) == 1:
		return !untrackedTopLevel[x.typeKey] && !strings.Contains(x.parentKey, "/providers/")
	default:
		return trackedNested[x.typeKey]
	}
}
