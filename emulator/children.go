package emulator

import (
	"slices"
	"strings"
)

// Child resources that real ARM creates or embeds on its own:
//
//   - default children (defaultChildren): a Service Bus or Event Hubs namespace is created with its
//     RootManageSharedAccessKey authorization rule (rights Listen, Manage, Send), whose listKeys answers at once; a
//     storage account with its blobServices/default, fileServices/default, queueServices/default and
//     tableServices/default (as its kind has them), bodies as recorded from Azure. They are listed by the parent's
//     child collection, not by /resources or Resource Graph, and go with their parent;
//   - embedded collections: a virtual network's properties.subnets, a network security group's
//     properties.securityRules, a route table's properties.routes and a load balancer's properties.inboundNatRules
//     are its child resources, listed (an empty list when there are none) in the parent. A child PUT or DELETE
//     shows in the parent's GET, and a PUT of the parent makes the children exactly the ones its body lists,
//     deleting the others (which is why ASO's hooks copy Azure's collection into the parent's PUT).

// defaultChild is a child resource created with its parent.
type defaultChild struct {
	segment   string // path segment of the child collection
	name      string
	props     map[string]any
	location  bool     // carries its parent's location
	sku       bool     // carries its parent's sku (with its tier), kept in step with the parent's
	kinds     []string // lower-cased parent kinds that have the child; every kind when empty
	permanent bool     // ARM offers no DELETE for it: a data file without it gets it on load
}

// Storage account kinds (lower-cased) by the services they have.
var (
	kindsWithBlob  = []string{"storage", "storagev2", "blobstorage", "blockblobstorage"}
	kindsWithFile  = []string{"storage", "storagev2", "filestorage"}
	kindsWithQueue = []string{"storage", "storagev2"} // queue and table services
)

var defaultChildren = map[string][]defaultChild{
	"microsoft.servicebus/namespaces": {{segment: "AuthorizationRules", name: "RootManageSharedAccessKey", location: true,
		props: map[string]any{"rights": []any{"Listen", "Manage", "Send"}}}},
	"microsoft.eventhub/namespaces": {{segment: "authorizationRules", name: "RootManageSharedAccessKey", location: true,
		props: map[string]any{"rights": []any{"Listen", "Manage", "Send"}}}},
	// GET bodies of a new StorageV2 Standard_LRS account's services (ASO's recorded storage sample, api-version
	// 2023-01-01): no location, no systemData, no provisioningState (serviceSettingsTypes).
	"microsoft.storage/storageaccounts": {
		{segment: "blobServices", name: "default", sku: true, kinds: kindsWithBlob, permanent: true, props: map[string]any{
			"cors":                  map[string]any{"corsRules": []any{}},
			"deleteRetentionPolicy": map[string]any{"allowPermanentDelete": false, "enabled": false}}},
		{segment: "fileServices", name: "default", sku: true, kinds: kindsWithFile, permanent: true, props: map[string]any{
			"protocolSettings":           map[string]any{"smb": map[string]any{}},
			"cors":                       map[string]any{"corsRules": []any{}},
			"shareDeleteRetentionPolicy": map[string]any{"enabled": true, "days": 7}}},
		{segment: "queueServices", name: "default", kinds: kindsWithQueue, permanent: true, props: map[string]any{
			"logging": map[string]any{"version": "1.0", "delete": false, "read": false, "write": false,
				"retentionPolicy": map[string]any{"enabled": false}},
			"cors": map[string]any{"corsRules": []any{}}}},
		{segment: "tableServices", name: "default", kinds: kindsWithQueue, permanent: true, props: map[string]any{
			"cors": map[string]any{"corsRules": []any{}}}},
	},
}

// defaultChildOf returns the default child a path names, or nil.
func defaultChildOf(p armPath) *defaultChild {
	typeKey := strings.ToLower(p.Type)
	i := strings.LastIndexByte(typeKey, '/')
	if i < 0 {
		return nil
	}
	for k, dc := range defaultChildren[typeKey[:i]] {
		if strings.EqualFold(dc.segment, typeKey[i+1:]) && strings.EqualFold(dc.name, p.Name) {
			return &defaultChildren[typeKey[:i]][k]
		}
	}
	return nil
}

// has reports whether a parent of the given kind has the child.
func (dc *defaultChild) has(kind string) bool {
	return len(dc.kinds) == 0 || kind == "" || slices.Contains(dc.kinds, strings.ToLower(kind))
}

// skuWithTier returns a copy of an ARM sku with its tier ("Standard_LRS" → "Standard"), or nil.
func skuWithTier(v any) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	out := deepCopyJSON(m)
	if name := getString(m, "name"); getString(m, "tier") == "" && name != "" {
		tier, _, _ := strings.Cut(name, "_")
		out["tier"] = tier
	}
	return out
}

// embeddedCollections maps a parent type to the property (and child collection segment) that lists its children.
var embeddedCollections = map[string]string{
	"microsoft.network/virtualnetworks":       "subnets",
	"microsoft.network/networksecuritygroups": "securityRules",
	"microsoft.network/routetables":           "routes",
	"microsoft.network/loadbalancers":         "inboundNatRules",
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
		if f := typeRemoves[r.typeKey]; f != nil {
			f(e, r)
		}
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

// createDefaultChildren stores the children real ARM creates with a new parent (only the permanent ones when
// permanentOnly). Caller holds e.mu (write).
func (e *Emulator) createDefaultChildren(parent *resource, permanentOnly bool) {
	dcs := defaultChildren[parent.typeKey]
	if len(dcs) == 0 {
		return
	}
	pm, err := parent.decode()
	if err != nil {
		return
	}
	for _, dc := range dcs {
		if permanentOnly && !dc.permanent || !dc.has(getString(pm, "kind")) {
			continue
		}
		p := parseARMPath(parent.ID + "/" + dc.segment + "/" + dc.name)
		if p.Kind != pathResource || e.store.get(strings.ToLower(p.ID)) != nil {
			continue
		}
		body := map[string]any{"properties": deepCopyJSON(dc.props)}
		if dc.location && parent.Location != "" {
			body["location"] = parent.Location
		}
		if sku := skuWithTier(pm["sku"]); dc.sku && sku != nil {
			body["sku"] = sku
		}
		e.finishBody(p, body, nil, "Succeeded")
		res := newResource(p, "", mustJSON(body))
		res.state = "Succeeded"
		e.store.put(res)
	}
}

// refreshDefaultChildren keeps the default children of an updated parent in step with it (their sku). Caller
// holds e.mu (write).
func (e *Emulator) refreshDefaultChildren(parent *resource) {
	var pm map[string]any
	for _, dc := range defaultChildren[parent.typeKey] {
		if !dc.sku {
			continue
		}
		if pm == nil {
			var err error
			if pm, err = parent.decode(); err != nil {
				return
			}
		}
		child := e.store.get(strings.ToLower(parent.ID + "/" + dc.segment + "/" + dc.name))
		sku := skuWithTier(pm["sku"])
		if child == nil || sku == nil {
			continue
		}
		if m, err := child.decode(); err == nil {
			m["sku"] = sku
			child.body = mustJSON(m)
		}
	}
}

// inheritFromParent sets the fields a default child takes from its parent on a PUT of it. Caller holds e.mu.
func (e *Emulator) inheritFromParent(p armPath, body map[string]any) {
	dc := defaultChildOf(p)
	if dc == nil || !dc.sku {
		return
	}
	if parent := e.store.get(strings.ToLower(p.Parent)); parent != nil {
		if pm, err := parent.decode(); err == nil {
			if sku := skuWithTier(pm["sku"]); sku != nil {
				body["sku"] = sku
			}
		}
	}
}

// keepOmittedProperties gives a PUT of a service settings singleton ARM's Set Service Properties semantics: a
// property the body omits keeps its value (old's, or the default child's on a create).
func keepOmittedProperties(p armPath, body, old map[string]any) {
	prev, _ := old["properties"].(map[string]any)
	if old == nil {
		if dc := defaultChildOf(p); dc != nil {
			prev = dc.props
		}
	}
	if len(prev) == 0 {
		return
	}
	props := ensureObject(body, "properties")
	for k, v := range deepCopyJSON(prev) {
		if _, ok := props[k]; !ok && k != "provisioningState" {
			props[k] = v
		}
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
		state := embeddedState(getString(body, "properties", "provisioningState")) // provisioned with the parent (network.go)
		e.finishBody(p, child, old, state)
		res := newResource(p, "", mustJSON(child))
		res.state = state
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
