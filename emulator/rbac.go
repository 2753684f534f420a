package emulator

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
)

// Permission is one permissions block of a role definition.
type Permission struct {
	Actions        []string `json:"actions"`
	NotActions     []string `json:"notActions"`
	DataActions    []string `json:"dataActions"`
	NotDataActions []string `json:"notDataActions"`
}

// RoleDefinition is a role: built in (real GUIDs) or custom (created through ARM).
type RoleDefinition struct {
	GUID        string
	RoleName    string
	Description string
	RoleType    string // "BuiltInRole" | "CustomRole"
	Permissions []Permission
}

// builtinRoles are the built-in roles the emulator knows, under their real well-known GUIDs, with Azure's own
// definitions: the data roles carry their dataActions and the few management actions Azure gives them (Service Bus
// Data Owner has Microsoft.ServiceBus/*, which lets a team create its queues with its own identity; the Storage Blob
// roles can read or manage containers). Azure has no built-in PostgreSQL data role (Flexible Server data access is granted through Entra
// administrators in the database), so none is defined: the seeds' "role-assignments-pgdb" use a management role
// such as Reader on the server, or a custom role created with a roleDefinitions PUT, both of which work here.
var builtinRoles = []RoleDefinition{
	{GUID: "8e3af657-a8ff-443c-a75c-2fe8c4bcb635", RoleName: "Owner", Description: "Grants full access to manage all resources, including the ability to assign roles in Azure RBAC.",
		Permissions: []Permission{{Actions: []string{"*"}}}},
	{GUID: "b24988ac-6180-42a0-ab88-20f7382dd24c", RoleName: "Contributor", Description: "Grants full access to manage all resources, but does not allow you to assign roles in Azure RBAC, manage assignments in Azure Blueprints, or share image galleries.",
		Permissions: []Permission{{Actions: []string{"*"}, NotActions: []string{"Microsoft.Authorization/*/Delete", "Microsoft.Authorization/*/Write", "Microsoft.Authorization/elevateAccess/Action", "Microsoft.Blueprint/blueprintAssignments/write", "Microsoft.Blueprint/blueprintAssignments/delete", "Microsoft.Compute/galleries/share/action", "Microsoft.Purview/consents/write", "Microsoft.Purview/consents/delete", "Microsoft.Resources/deploymentStacks/manageDenySetting/action", "Microsoft.Subscription/cancel/action", "Microsoft.Subscription/enable/action"}}}},
	{GUID: "acdd72a7-3385-48ef-bd42-f606fba81ae7", RoleName: "Reader", Description: "View all resources, but does not allow you to make any changes.",
		Permissions: []Permission{{Actions: []string{"*/read"}}}},
	{GUID: "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9", RoleName: "User Access Administrator", Description: "Lets you manage user access to Azure resources.",
		Permissions: []Permission{{Actions: []string{"*/read", "Microsoft.Authorization/*", "Microsoft.Support/*"}}}},
	{GUID: "f58310d9-a9f6-439a-9e8d-f62e7b41a168", RoleName: "Role Based Access Control Administrator", Description: "Manage access to Azure resources by assigning roles using Azure RBAC.",
		Permissions: []Permission{{Actions: []string{"Microsoft.Authorization/roleAssignments/write", "Microsoft.Authorization/roleAssignments/delete", "*/read", "Microsoft.Support/*"}}}},
	{GUID: "f1a07417-d97a-45cb-824c-7a7467783830", RoleName: "Managed Identity Operator", Description: "Read and Assign User Assigned Identity",
		Permissions: []Permission{{Actions: []string{"Microsoft.ManagedIdentity/userAssignedIdentities/*/read", "Microsoft.ManagedIdentity/userAssignedIdentities/*/assign/action", "Microsoft.Authorization/*/read", "Microsoft.Insights/alertRules/*", "Microsoft.Resources/subscriptions/resourceGroups/read", "Microsoft.Resources/deployments/*", "Microsoft.Support/*"}}}},
	{GUID: "e40ec5ca-96e0-45a2-b4ff-59039f2c2b59", RoleName: "Managed Identity Contributor", Description: "Create, Read, Update, and Delete User Assigned Identity",
		Permissions: []Permission{{Actions: []string{"Microsoft.ManagedIdentity/userAssignedIdentities/read", "Microsoft.ManagedIdentity/userAssignedIdentities/write", "Microsoft.ManagedIdentity/userAssignedIdentities/delete", "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/read", "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/write", "Microsoft.ManagedIdentity/userAssignedIdentities/federatedIdentityCredentials/delete", "Microsoft.Authorization/*/read", "Microsoft.Insights/alertRules/*", "Microsoft.Resources/subscriptions/resourceGroups/read", "Microsoft.Resources/deployments/*", "Microsoft.Support/*"}}}},
	{GUID: "090c5cfd-751d-490a-894a-3ce6f1109419", RoleName: "Azure Service Bus Data Owner", Description: "Allows for full access to Azure Service Bus resources.",
		Permissions: []Permission{{Actions: []string{"Microsoft.ServiceBus/*"}, DataActions: []string{"Microsoft.ServiceBus/*"}}}},
	{GUID: "69a216fc-b8fb-44d8-bc22-1f3c2cd27a39", RoleName: "Azure Service Bus Data Sender", Description: "Allows for send access to Azure Service Bus resources.",
		Permissions: []Permission{{Actions: []string{"Microsoft.ServiceBus/*/queues/read", "Microsoft.ServiceBus/*/topics/read", "Microsoft.ServiceBus/*/topics/subscriptions/read"}, DataActions: []string{"Microsoft.ServiceBus/*/send/action"}}}},
	{GUID: "4f6d3b9b-027b-4f4c-9142-0e5a2a2247e0", RoleName: "Azure Service Bus Data Receiver", Description: "Allows for receive access to Azure Service Bus resources.",
		Permissions: []Permission{{Actions: []string{"Microsoft.ServiceBus/*/queues/read", "Microsoft.ServiceBus/*/topics/read", "Microsoft.ServiceBus/*/topics/subscriptions/read"}, DataActions: []string{"Microsoft.ServiceBus/*/receive/action"}}}},
	{GUID: "7f951dda-4ed3-4680-a7ca-43fe172d538d", RoleName: "AcrPull", Description: "acr pull",
		Permissions: []Permission{{Actions: []string{"Microsoft.ContainerRegistry/registries/pull/read"}}}},
	{GUID: "8311e382-0749-4cb8-b61a-304f252e45ec", RoleName: "AcrPush", Description: "acr push",
		Permissions: []Permission{{Actions: []string{"Microsoft.ContainerRegistry/registries/pull/read", "Microsoft.ContainerRegistry/registries/push/write"}}}},
	{GUID: "c2f4ef07-c644-48eb-af81-4b1b4947fb11", RoleName: "AcrDelete", Description: "acr delete",
		Permissions: []Permission{{Actions: []string{"Microsoft.ContainerRegistry/registries/artifacts/delete"}}}},
	{GUID: "ba92f5b4-2d11-453d-a403-e96b0029c9fe", RoleName: "Storage Blob Data Contributor", Description: "Allows for read, write and delete access to Azure Storage blob containers and data",
		Permissions: []Permission{{Actions: []string{"Microsoft.Storage/storageAccounts/blobServices/containers/delete", "Microsoft.Storage/storageAccounts/blobServices/containers/read", "Microsoft.Storage/storageAccounts/blobServices/containers/write", "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action"}, DataActions: []string{"Microsoft.Storage/storageAccounts/blobServices/containers/blobs/delete", "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read", "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/write", "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/move/action", "Microsoft.Storage/storageAccounts/blobServices/containers/blobs/add/action"}}}},
	{GUID: "2a2b9908-6ea1-4ae2-8e65-a410df84e7d1", RoleName: "Storage Blob Data Reader", Description: "Allows for read access to Azure Storage blob containers and data",
		Permissions: []Permission{{Actions: []string{"Microsoft.Storage/storageAccounts/blobServices/containers/read", "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action"}, DataActions: []string{"Microsoft.Storage/storageAccounts/blobServices/containers/blobs/read"}}}},
	{GUID: "b7e6dc6d-f1e8-4753-8033-0f276bb0955b", RoleName: "Storage Blob Data Owner", Description: "Allows for full access to Azure Storage blob containers and data, including assigning POSIX access control.",
		Permissions: []Permission{{Actions: []string{"Microsoft.Storage/storageAccounts/blobServices/containers/*", "Microsoft.Storage/storageAccounts/blobServices/generateUserDelegationKey/action"}, DataActions: []string{"Microsoft.Storage/storageAccounts/blobServices/containers/blobs/*"}}}},
}

// BuiltinRoles returns the built-in role definitions.
func BuiltinRoles() []RoleDefinition {
	out := make([]RoleDefinition, len(builtinRoles))
	copy(out, builtinRoles)
	for i := range out {
		out[i].RoleType = "BuiltInRole"
	}
	return out
}

var (
	builtinByGUID = map[string]*RoleDefinition{}
	builtinByName = map[string]*RoleDefinition{}
)

func init() {
	for i := range builtinRoles {
		r := &builtinRoles[i]
		r.RoleType = "BuiltInRole"
		builtinByGUID[r.GUID] = r
		builtinByName[strings.ToLower(r.RoleName)] = r
	}
}

// compiledRole holds lower-cased action patterns.
type compiledRole struct {
	actions, notActions []string
}

func compileRole(rd *RoleDefinition) *compiledRole {
	c := &compiledRole{}
	for _, p := range rd.Permissions {
		for _, a := range p.Actions {
			c.actions = append(c.actions, strings.ToLower(a))
		}
		for _, a := range p.NotActions {
			c.notActions = append(c.notActions, strings.ToLower(a))
		}
	}
	return c
}

func (c *compiledRole) allows(action string) bool {
	ok := false
	for _, p := range c.actions {
		if globMatch(p, action) {
			ok = true
			break
		}
	}
	if !ok {
		return false
	}
	for _, p := range c.notActions {
		if globMatch(p, action) {
			return false
		}
	}
	return true
}

// globMatch matches s against pattern where '*' matches any run of characters (both lower-cased).
func globMatch(pattern, s string) bool {
	if pattern == "*" {
		return true
	}
	px, sx := 0, 0
	nextPx, nextSx := -1, -1
	for px < len(pattern) || sx < len(s) {
		if px < len(pattern) {
			c := pattern[px]
			if c == '*' {
				nextPx, nextSx = px, sx+1
				px++
				continue
			}
			if sx < len(s) && s[sx] == c {
				px++
				sx++
				continue
			}
		}
		if nextPx >= 0 && nextSx <= len(s) {
			px, sx = nextPx, nextSx
			continue
		}
		return false
	}
	return true
}

type assignment struct {
	key      string // lower-cased role assignment ID
	scope    string // lower-cased scope
	roleGUID string // lower-cased role definition GUID
}

// rbacIndex indexes role assignments by principal and custom role definitions by GUID.
type rbacIndex struct {
	byPrincipal map[string][]assignment
	byKey       map[string]string // assignment key -> principal
	custom      map[string]*compiledRole
	builtin     map[string]*compiledRole
}

func newRBACIndex() *rbacIndex {
	x := &rbacIndex{byPrincipal: map[string][]assignment{}, byKey: map[string]string{}, custom: map[string]*compiledRole{}, builtin: map[string]*compiledRole{}}
	for g, rd := range builtinByGUID {
		x.builtin[g] = compileRole(rd)
	}
	return x
}

func (x *rbacIndex) addAssignment(principalID string, a assignment) {
	x.removeAssignment(a.key)
	p := strings.ToLower(principalID)
	x.byPrincipal[p] = append(x.byPrincipal[p], a)
	x.byKey[a.key] = p
}

func (x *rbacIndex) removeAssignment(key string) {
	p, ok := x.byKey[key]
	if !ok {
		return
	}
	delete(x.byKey, key)
	list := x.byPrincipal[p]
	for i, a := range list {
		if a.key == key {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(x.byPrincipal, p)
	} else {
		x.byPrincipal[p] = list
	}
}

func (x *rbacIndex) role(guid string) *compiledRole {
	if r := x.builtin[guid]; r != nil {
		return r
	}
	return x.custom[guid]
}

// allowed reports whether principal may perform action (lower-cased) on target (lower-cased ID). Caller holds e.mu.
func (x *rbacIndex) allowed(principalID, action, target string) bool {
	for _, a := range x.byPrincipal[strings.ToLower(principalID)] {
		if !scopeContains(a.scope, target) {
			continue
		}
		if r := x.role(a.roleGUID); r != nil && r.allows(action) {
			return true
		}
	}
	return false
}

// authorize checks RBAC and writes ARM's 403 AuthorizationFailed on denial.
func (e *Emulator) authorize(w http.ResponseWriter, c *accessClaims, action, scope string, info *reqInfo) bool {
	e.mu.RLock()
	ok := e.rbac.allowed(c.Oid, strings.ToLower(action), strings.ToLower(scope))
	e.mu.RUnlock()
	if ok {
		return true
	}
	info.code = "AuthorizationFailed"
	writeARMError(w, http.StatusForbidden, "AuthorizationFailed", fmt.Sprintf(
		"The client '%s' with object id '%s' does not have authorization to perform action '%s' over scope '%s' or the scope is invalid. If access was recently granted, please refresh your credentials.",
		c.AppID, c.Oid, action, scope))
	return false
}

// actionFor returns the RBAC action of an operation on a type ("read", "write", "delete" or "<name>/action").
func actionFor(typ, verb string) string {
	switch {
	case strings.EqualFold(typ, typeResourceGroup):
		typ = "Microsoft.Resources/subscriptions/resourceGroups"
	case strings.EqualFold(typ, typeTenant):
		typ = "Microsoft.Resources/tenants"
	}
	return typ + "/" + verb
}

// resolveRole finds a role by name (built-in or custom, case-insensitive) or GUID. Caller holds e.mu.
func (e *Emulator) resolveRole(role string) (string, bool) {
	if isGUID(role) {
		g := strings.ToLower(role)
		if e.rbac.role(g) != nil {
			return g, true
		}
		return "", false
	}
	if rd := builtinByName[strings.ToLower(role)]; rd != nil {
		return rd.GUID, true
	}
	for _, r := range e.store.ofType(roleDefTypeKey, "") {
		var m struct {
			Properties struct {
				RoleName string `json:"roleName"`
			} `json:"properties"`
		}
		if json.Unmarshal(r.body, &m) == nil && strings.EqualFold(m.Properties.RoleName, role) {
			return strings.ToLower(r.Name), true
		}
	}
	return "", false
}

// AssignRole grants a role (by name, e.g. "Contributor", or GUID) to a principal at a scope (an ARM ID; "" means
// the default subscription). The assignment is a real Microsoft.Authorization/roleAssignments resource with a
// deterministic name, so assigning the same role twice is a no-op.
func (e *Emulator) AssignRole(principalObjectID, roleName, scope string) error {
	if scope == "" {
		scope = "/subscriptions/" + e.subscriptionID
	}
	scope = "/" + strings.Trim(scope, "/")
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.dir.byObject[strings.ToLower(principalObjectID)] == nil {
		return fmt.Errorf("assign role %q: principal %s does not exist", roleName, principalObjectID)
	}
	guid, ok := e.resolveRole(roleName)
	if !ok {
		return fmt.Errorf("assign role %q: role definition not found", roleName)
	}
	h := sha1.Sum([]byte(strings.ToLower(principalObjectID + "|" + guid + "|" + scope)))
	h[6] = (h[6] & 0x0f) | 0x50
	h[8] = (h[8] & 0x3f) | 0x80
	var b [16]byte
	copy(b[:], h[:16])
	name := formatUUID(b)
	if scope == "/" {
		scope = ""
	}
	p := parseARMPath(scope + "/providers/Microsoft.Authorization/roleAssignments/" + name)
	if p.Kind != pathResource {
		return fmt.Errorf("assign role %q: invalid scope %q", roleName, scope)
	}
	if e.store.get(strings.ToLower(p.ID)) != nil {
		return nil
	}
	if sk := strings.ToLower(p.Sub); sk != "" && e.subs[sk] == nil {
		return fmt.Errorf("assign role %q: subscription %s does not exist", roleName, p.Sub)
	}
	body := map[string]any{"properties": map[string]any{
		"principalId": strings.ToLower(principalObjectID), "principalType": "ServicePrincipal",
		"roleDefinitionId": e.roleDefinitionID(p.Sub, guid),
	}}
	if _, aerr := e.prepareRoleAssignment(p, body, nil); aerr != nil {
		return fmt.Errorf("assign role %q: %s", roleName, aerr.Message)
	}
	e.finishBody(p, body, nil, "Succeeded")
	r := newResource(p, "", mustJSON(body))
	r.state = "Succeeded"
	e.store.put(r)
	e.indexResource(r, body)
	e.markDirty()
	return nil
}

// roleDefinitionID renders the ID of a role definition as ARM returns it for a subscription (tenant-level when sub is "").
func (e *Emulator) roleDefinitionID(sub, guid string) string {
	if sub == "" {
		return "/providers/Microsoft.Authorization/roleDefinitions/" + guid
	}
	return "/subscriptions/" + sub + "/providers/Microsoft.Authorization/roleDefinitions/" + guid
}

// builtinRoleJSON renders a built-in role definition as ARM does.
func builtinRoleJSON(rd *RoleDefinition, id string) map[string]any {
	perms := make([]any, 0, len(rd.Permissions))
	for _, p := range rd.Permissions {
		perms = append(perms, map[string]any{
			"actions": nonNil(p.Actions), "notActions": nonNil(p.NotActions),
			"dataActions": nonNil(p.DataActions), "notDataActions": nonNil(p.NotDataActions),
		})
	}
	return map[string]any{
		"id": id, "name": rd.GUID, "type": "Microsoft.Authorization/roleDefinitions",
		"properties": map[string]any{
			"roleName": rd.RoleName, "type": "BuiltInRole", "description": rd.Description,
			"assignableScopes": []string{"/"}, "permissions": perms,
			"createdOn": "2015-02-02T21:55:09.8806423Z", "updatedOn": "2024-01-01T00:00:00.0000000Z",
		},
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// builtinRoleList returns the built-in roles sorted by name, rendered for the scope's subscription.
func (e *Emulator) builtinRoleList(sub string) []map[string]any {
	out := make([]map[string]any, 0, len(builtinRoles))
	for i := range builtinRoles {
		rd := &builtinRoles[i]
		out = append(out, builtinRoleJSON(rd, e.roleDefinitionID(sub, rd.GUID)))
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i]["properties"].(map[string]any)["roleName"].(string) < out[j]["properties"].(map[string]any)["roleName"].(string)
	})
	return out
}
