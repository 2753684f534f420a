package emulator

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Lower-cased ARM types with special behaviour.
const (
	rgTypeKey      = "microsoft.resources/resourcegroups"
	raTypeKey      = "microsoft.authorization/roleassignments"
	roleDefTypeKey = "microsoft.authorization/roledefinitions"
	uaiTypeKey     = "microsoft.managedidentity/userassignedidentities"
	ficTypeKey     = "microsoft.managedidentity/userassignedidentities/federatedidentitycredentials"
)

// syncTypes are answered synchronously by real ARM (no LRO) and not in the table of recorded answers
// (armtable_gen.go), which knows resource groups, role assignments and definitions and identities.
var syncTypes = map[string]bool{
	"microsoft.authorization/locks": true, "microsoft.resources/tags": true,
}

// serviceSettingsTypes are the storage services: singletons created with their account (defaultChildren) whose PUT
// sets service properties, keeping the ones its body omits (keepOmittedProperties), and whose body carries neither
// properties.provisioningState nor systemData, as recorded from Azure.
var serviceSettingsTypes = map[string]bool{
	"microsoft.storage/storageaccounts/blobservices":  true,
	"microsoft.storage/storageaccounts/fileservices":  true,
	"microsoft.storage/storageaccounts/queueservices": true,
	"microsoft.storage/storageaccounts/tableservices": true,
}

// putStyle is how a resource provider answers a PUT: the default for types the table of recorded answers
// (armtable.go) does not know.
type putStyle struct {
	sync         bool // answer at once with the final resource
	createStatus int  // status of a create (sync or async)
	accepted     bool // async with 202 Accepted and no body (create and update)
	locationOnly bool // async with a Location header only (no Azure-AsyncOperation)
}

// putStyles overrides the default style (async, 201 on create, 200 on update, Azure-AsyncOperation) for types the
// table of recorded answers does not know; for a type it knows, the table wins.
var putStyles = map[string]putStyle{
	"microsoft.servicebus/namespaces/queues/authorizationrules": {sync: true, createStatus: 200},
}

func styleFor(typeKey string) putStyle {
	if s, ok := putStyles[typeKey]; ok {
		return s
	}
	if strings.HasPrefix(typeKey, "microsoft.dbforpostgresql/flexibleservers/") {
		return putStyle{accepted: true}
	}
	if syncTypes[typeKey] {
		return putStyle{sync: true, createStatus: 201}
	}
	return putStyle{createStatus: 201}
}

// untrackedTopLevel are top-level (or scope-level) types that are proxy resources: no location.
var untrackedTopLevel = map[string]bool{
	"microsoft.insights/diagnosticsettings": true, "microsoft.resources/deployments": true,
	"microsoft.resources/tags": true, "microsoft.resources/links": true, "microsoft.managedidentity/identities": true,
	"microsoft.security/pricings": true, "microsoft.features/featureproviders": true,
}

// trackedNested are nested types that are tracked resources (they require a location).
var trackedNested = map[string]bool{
	"microsoft.cdn/profiles/endpoints": true, "microsoft.cdn/profiles/afdendpoints": true,
	"microsoft.sql/servers/databases": true, "microsoft.sql/servers/elasticpools": true,
	"microsoft.web/sites/slots": true, "microsoft.network/virtualhubs/hubvirtualnetworkconnections": false,
	"microsoft.documentdb/databaseaccounts/sqldatabases": false,
}

// isTracked reports whether a type requires a location (LocationRequired when absent).
func isTracked(p armPath, typeKey string) bool {
	if typeKey == rgTypeKey {
		return true
	}
	if p.Extension || untrackedTopLevel[typeKey] || strings.HasPrefix(typeKey, "microsoft.authorization/") {
		return false
	}
	if typeDepth(typeKey) == 1 {
		return true
	}
	return trackedNested[typeKey]
}

// fieldDefault is a server default: set at path when absent. String values (also inside maps) expand
// {name}, {location}, {created}, {uniq}, {subscription} and {resourceGroup}.
type fieldDefault struct {
	path  string
	value any
}

// typeDefaults are the realistic read-only/default fields a few common types get from ARM, so that diffs face what
// real ARM returns. Keep it small and data-driven.
var typeDefaults = map[string][]fieldDefault{
	"microsoft.storage/storageaccounts": {
		{"properties.primaryEndpoints", map[string]any{
			"blob": "https://{name}.blob.core.windows.net/", "queue": "https://{name}.queue.core.windows.net/",
			"table": "https://{name}.table.core.windows.net/", "file": "https://{name}.file.core.windows.net/",
			"dfs": "https://{name}.dfs.core.windows.net/", "web": "https://{name}.z6.web.core.windows.net/"}},
		{"properties.primaryLocation", "{location}"},
		{"properties.statusOfPrimary", "available"},
		{"properties.creationTime", "{created}"},
		{"properties.supportsHttpsTrafficOnly", true},
		{"properties.accessTier", "Hot"},
		{"properties.encryption", map[string]any{"keySource": "Microsoft.Storage", "services": map[string]any{
			"blob": map[string]any{"enabled": true, "keyType": "Account"}, "file": map[string]any{"enabled": true, "keyType": "Account"}}}},
	},
	"microsoft.servicebus/namespaces": {
		{"properties.serviceBusEndpoint", "https://{name}.servicebus.windows.net:443/"},
		{"properties.metricId", "{subscription}:{name}"},
		{"properties.status", "Active"},
		{"properties.createdAt", "{created}"},
		{"properties.minimumTlsVersion", "1.2"},
		{"properties.publicNetworkAccess", "Enabled"},
		{"properties.disableLocalAuth", false},
	},
	"microsoft.servicebus/namespaces/queues": {
		{"properties.status", "Active"},
		{"properties.maxSizeInMegabytes", int64(1024)},
		{"properties.lockDuration", "PT1M"},
		{"properties.maxDeliveryCount", int64(10)},
		{"properties.defaultMessageTimeToLive", "P10675199DT2H48M5.4775807S"},
		{"properties.createdAt", "{created}"},
	},
	"microsoft.servicebus/namespaces/topics": {
		{"properties.status", "Active"},
		{"properties.maxSizeInMegabytes", int64(1024)},
		{"properties.defaultMessageTimeToLive", "P10675199DT2H48M5.4775807S"},
		{"properties.createdAt", "{created}"},
	},
	"microsoft.servicebus/namespaces/topics/subscriptions": {
		{"properties.status", "Active"},
		{"properties.lockDuration", "PT1M"},
		{"properties.maxDeliveryCount", int64(10)},
	},
	"microsoft.dbforpostgresql/flexibleservers": {
		{"properties.fullyQualifiedDomainName", "{name}.postgres.database.azure.com"},
		{"properties.state", "Ready"},
		{"properties.availabilityZone", "1"},
	},
	"microsoft.keyvault/vaults": {
		{"properties.vaultUri", "https://{name}.vault.azure.net/"},
	},
	"microsoft.cdn/profiles/afdendpoints": {
		{"properties.hostName", "{name}-{uniq}.z01.azurefd.net"},
		{"properties.deploymentStatus", "NotStarted"},
	},
}

func expandTemplate(v any, vars map[string]string) any {
	switch t := v.(type) {
	case string:
		if !strings.Contains(t, "{") {
			return t
		}
		for k, val := range vars {
			t = strings.ReplaceAll(t, "{"+k+"}", val)
		}
		return t
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			out[k] = expandTemplate(x, vars)
		}
		return out
	default:
		return v
	}
}

func applyDefaults(typeKey string, body map[string]any, vars map[string]string) {
	for _, d := range typeDefaults[typeKey] {
		parts := strings.Split(d.path, ".")
		cur := body
		for _, p := range parts[:len(parts)-1] {
			cur = ensureObject(cur, p)
		}
		if _, ok := cur[parts[len(parts)-1]]; !ok {
			cur[parts[len(parts)-1]] = expandTemplate(d.value, vars)
		}
	}
}

// armError is an ARM error response.
type armError struct {
	Status  int
	Code    string
	Message string
}

func newARMError(status int, code, format string, args ...any) *armError {
	return &armError{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func writeARMError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"code": code, "message": msg}})
}

// prepareTypeSpecific validates and completes the body of types with special rules. old is the previous body
// (nil on create). Caller holds e.mu (write).
func (e *Emulator) prepareTypeSpecific(p armPath, typeKey string, body, old map[string]any) *armError {
	if f := typePrepares[typeKey]; f != nil {
		if err := f(e, p, body, old); err != nil {
			return err
		}
	}
	switch typeKey {
	case vaultTypeKey:
		if err := prepareVaultProperties(body, old); err != nil { // keyvault.go
			return err
		}
	case vnetTypeKey:
		if old != nil {
			if err := e.refuseSubnetRemoval(p, body); err != nil { // network.go
				return err
			}
		}
	case raTypeKey:
		_, err := e.prepareRoleAssignment(p, body, old)
		return err
	case roleDefTypeKey:
		return e.prepareRoleDefinition(p, body)
	case uaiTypeKey:
		props := ensureObject(body, "properties")
		props["tenantId"] = e.tenantID
		props["principalId"] = firstNonEmpty(getString(old, "properties", "principalId"), newUUID())
		props["clientId"] = firstNonEmpty(getString(old, "properties", "clientId"), newUUID())
	case ficTypeKey:
		props, _ := body["properties"].(map[string]any)
		if props == nil || getString(body, "properties", "issuer") == "" || getString(body, "properties", "subject") == "" {
			return newARMError(http.StatusBadRequest, "BadRequest", "The federated identity credential requires properties 'issuer' and 'subject'.")
		}
		if auds, _ := props["audiences"].([]any); len(auds) == 0 {
			props["audiences"] = []any{DefaultAssertionAudience}
		}
	}
	return e.prepareIdentity(body, old)
}

// prepareIdentity fills identity.principalId/tenantId for system-assigned identities and the principal and client
// IDs of user-assigned identities.
func (e *Emulator) prepareIdentity(body, old map[string]any) *armError {
	id, ok := body["identity"].(map[string]any)
	if !ok {
		return nil
	}
	typ := strings.ToLower(getString(id, "type"))
	if strings.Contains(typ, "systemassigned") {
		id["principalId"] = firstNonEmpty(getString(old, "identity", "principalId"), newUUID())
		id["tenantId"] = e.tenantID
	} else {
		delete(id, "principalId")
		delete(id, "tenantId")
	}
	if uais, ok := id["userAssignedIdentities"].(map[string]any); ok {
		for k := range uais {
			r := e.store.get(strings.ToLower(k))
			if r == nil || r.typeKey != uaiTypeKey {
				return newARMError(http.StatusBadRequest, "FailedIdentityOperation",
					"Identity operation for resource failed with error 'Failed to perform resource identity operation. Status: 'NotFound'. Response: 'The user assigned identity '%s' was not found.''.", k)
			}
			m, err := r.decode()
			if err != nil {
				return newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err)
			}
			uais[k] = map[string]any{"principalId": getString(m, "properties", "principalId"), "clientId": getString(m, "properties", "clientId")}
		}
	}
	return nil
}

func (e *Emulator) prepareRoleAssignment(p armPath, body, old map[string]any) (string, *armError) {
	if !isGUID(p.Name) {
		return "", newARMError(http.StatusBadRequest, "InvalidRoleAssignmentId", "The role assignment ID '%s' is not valid. The role assignment ID must be a GUID.", p.Name)
	}
	props, _ := body["properties"].(map[string]any)
	if props == nil {
		return "", newARMError(http.StatusBadRequest, "InvalidRequestContent", "The request content was invalid and could not be deserialized: 'Required property 'properties' not found in JSON.'")
	}
	rdID := getString(props, "roleDefinitionId")
	principalID := strings.ToLower(getString(props, "principalId"))
	if rdID == "" {
		return "", newARMError(http.StatusBadRequest, "InvalidRoleDefinitionId", "The role definition ID '' is not valid.")
	}
	if !isGUID(principalID) {
		return "", newARMError(http.StatusBadRequest, "InvalidPrincipalId", "A valid principal ID must be provided for role assignment.")
	}
	guid := strings.ToLower(lastSegment(rdID))
	if !isGUID(guid) || e.rbac.role(guid) == nil {
		return "", newARMError(http.StatusBadRequest, "RoleDefinitionDoesNotExist", "The specified role definition with ID '%s' does not exist.", lastSegment(rdID))
	}
	scope := p.Parent
	if scope == "" {
		scope = "/"
	}
	if old != nil {
		oldProps, _ := old["properties"].(map[string]any)
		if !strings.EqualFold(getString(oldProps, "principalId"), principalID) ||
			!strings.EqualFold(lastSegment(getString(oldProps, "roleDefinitionId")), guid) ||
			!strings.EqualFold(getString(oldProps, "scope"), scope) {
			return "", newARMError(http.StatusConflict, "RoleAssignmentUpdateNotPermitted", "Tenant ID, application ID, principal ID, and scope are not allowed to be updated.")
		}
	}
	key := strings.ToLower(p.ID)
	for _, a := range e.rbac.byPrincipal[principalID] {
		if a.key != key && a.roleGUID == guid && a.scope == strings.ToLower(scope) {
			return "", newARMError(http.StatusConflict, "RoleAssignmentExists", "The role assignment already exists.")
		}
	}
	pt := getString(props, "principalType")
	if pt == "" {
		pr := e.dir.byObject[principalID]
		if pr == nil {
			return "", newARMError(http.StatusBadRequest, "PrincipalNotFound",
				"Principal %s does not exist in the directory %s. Check that you have the correct principal ID. If you are creating this principal and then immediately assigning a role, this error might be related to a replication delay. In this case, set the role assignment principalType property to a value, such as ServicePrincipal, User, or Group.  See https://aka.ms/docs-principaltype",
				strings.ReplaceAll(principalID, "-", ""), e.tenantID)
		}
		pt = "ServicePrincipal"
	}
	props["principalType"] = pt
	props["principalId"] = principalID
	props["scope"] = scope
	now := armTime(nowUTC())
	props["createdOn"] = firstNonEmpty(getString(old, "properties", "createdOn"), now)
	props["updatedOn"] = now
	if _, ok := props["condition"]; !ok {
		props["condition"] = nil
		props["conditionVersion"] = nil
	}
	return guid, nil
}

func (e *Emulator) prepareRoleDefinition(p armPath, body map[string]any) *armError {
	if !isGUID(p.Name) {
		return newARMError(http.StatusBadRequest, "RoleDefinitionIdInvalid", "The role definition ID '%s' is not valid. The role definition ID must be a GUID.", p.Name)
	}
	if builtinByGUID[strings.ToLower(p.Name)] != nil {
		return newARMError(http.StatusBadRequest, "RoleDefinitionNameNotUnique", "A role definition cannot be updated with a name that already exists.")
	}
	props, _ := body["properties"].(map[string]any)
	if props == nil || getString(props, "roleName") == "" {
		return newARMError(http.StatusBadRequest, "RoleDefinitionNameNullOrEmpty", "The role definition name cannot be null or empty.")
	}
	if bi := builtinByName[strings.ToLower(getString(props, "roleName"))]; bi != nil {
		return newARMError(http.StatusConflict, "RoleDefinitionWithSameNameExists", "A custom role with the same name already exists in this directory. Use a different name.")
	}
	props["type"] = "CustomRole"
	if _, ok := props["assignableScopes"]; !ok {
		scope := p.Parent
		if scope == "" {
			scope = "/"
		}
		props["assignableScopes"] = []any{scope}
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// finishBody sets the read-only envelope: id, name, type, provisioningState and type defaults.
func (e *Emulator) finishBody(p armPath, body, old map[string]any, state string) {
	body["id"] = p.ID
	body["name"] = p.Name
	body["type"] = p.Type
	typeKey := strings.ToLower(p.Type)
	props := ensureObject(body, "properties")
	bare := serviceSettingsTypes[typeKey]
	switch {
	case bare:
		delete(props, "provisioningState") // a PATCH of a body stored by an older emulator
		delete(body, "systemData")
	case state != "":
		props["provisioningState"] = state
	}
	created := getString(old, "systemData", "createdAt")
	if created == "" {
		created = armTime(nowUTC())
	}
	if typeKey != raTypeKey && typeKey != roleDefTypeKey && !bare {
		sd := map[string]any{"createdAt": created, "lastModifiedAt": armTime(nowUTC()), "createdByType": "Application", "lastModifiedByType": "Application"}
		body["systemData"] = sd
	}
	if _, ok := typeDefaults[typeKey]; ok {
		sum := sha256.Sum256([]byte(strings.ToLower(p.ID)))
		applyDefaults(typeKey, body, map[string]string{
			"name": p.Name, "location": getString(body, "location"), "created": created,
			"uniq": hex.EncodeToString(sum[:6]), "subscription": p.Sub, "resourceGroup": p.RG,
		})
	}
}

// indexResource updates the directory and RBAC index after a resource was stored. Caller holds e.mu (write).
func (e *Emulator) indexResource(r *resource, body map[string]any) {
	switch r.typeKey {
	case raTypeKey:
		e.rbac.addAssignment(getString(body, "properties", "principalId"), assignment{
			key: r.key, scope: strings.ToLower(getString(body, "properties", "scope")),
			roleGUID: strings.ToLower(lastSegment(getString(body, "properties", "roleDefinitionId"))),
		})
	case roleDefTypeKey:
		rd := &RoleDefinition{GUID: strings.ToLower(r.Name)}
		if perms, ok := getPath(body, "properties", "permissions"); ok {
			for _, pv := range asSlice(perms) {
				pm, _ := pv.(map[string]any)
				rd.Permissions = append(rd.Permissions, Permission{Actions: asStrings(pm["actions"]), NotActions: asStrings(pm["notActions"])})
			}
		}
		e.rbac.custom[rd.GUID] = compileRole(rd)
	case uaiTypeKey:
		e.dir.add(&principal{ObjectID: getString(body, "properties", "principalId"), ClientID: getString(body, "properties", "clientId"),
			DisplayName: r.Name, Kind: kindManagedIdentity, ResourceID: r.ID})
	}
	if pid := getString(body, "identity", "principalId"); pid != "" {
		e.dir.add(&principal{ObjectID: pid, DisplayName: r.Name, Kind: kindManagedIdentity, ResourceID: r.ID})
	}
}

// unindexResource reverses indexResource for a removed resource. Caller holds e.mu (write).
func (e *Emulator) unindexResource(r *resource) {
	body, err := r.decode()
	if err != nil {
		return
	}
	switch r.typeKey {
	case raTypeKey:
		e.rbac.removeAssignment(r.key)
	case roleDefTypeKey:
		delete(e.rbac.custom, strings.ToLower(r.Name))
	case uaiTypeKey:
		e.dir.remove(getString(body, "properties", "principalId"))
	}
	if pid := getString(body, "identity", "principalId"); pid != "" {
		e.dir.remove(pid)
	}
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func asStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// listKeys renders the keys of a resource for a listKeys action (deterministic per resource and emulator).
func (e *Emulator) listKeys(r *resource) (map[string]any, bool) {
	k := func(n string) string {
		sum := sha256.Sum256([]byte(e.adminToken + "|" + r.key + "|" + n))
		return strings.TrimRight(encodeStd(sum[:]), "=") + "=="
	}
	switch {
	case r.typeKey == "microsoft.storage/storageaccounts":
		return map[string]any{"keys": []any{
			map[string]any{"keyName": "key1", "value": k("key1"), "permissions": "FULL", "creationTime": armTime(time.Unix(0, 0))},
			map[string]any{"keyName": "key2", "value": k("key2"), "permissions": "FULL", "creationTime": armTime(time.Unix(0, 0))},
		}}, true
	case (strings.HasPrefix(r.typeKey, "microsoft.servicebus/namespaces") || strings.HasPrefix(r.typeKey, "microsoft.eventhub/namespaces")) &&
		strings.HasSuffix(r.typeKey, "/authorizationrules"):
		// {ns}/AuthorizationRules/{rule} or {ns}/{queues|topics|eventhubs}/{entity}/authorizationRules/{rule}
		segs := strings.Split(r.ID, "/")
		nsName, entity := "", ""
		for i, s := range segs {
			if i+1 >= len(segs) {
				break
			}
			switch strings.ToLower(s) {
			case "namespaces":
				nsName = segs[i+1]
			case "queues", "topics", "eventhubs":
				entity = segs[i+1]
			}
		}
		ep := "Endpoint=sb://" + nsName + ".servicebus.windows.net/;SharedAccessKeyName=" + r.Name + ";SharedAccessKey="
		suffix := ""
		if entity != "" {
			suffix = ";EntityPath=" + entity
		}
		return map[string]any{
			"keyName": r.Name, "primaryKey": k("primary"), "secondaryKey": k("secondary"),
			"primaryConnectionString": ep + k("primary") + suffix, "secondaryConnectionString": ep + k("secondary") + suffix,
		}, true
	}
	return nil, false
}
