package emulator

import (
	"net/http"
	"strings"
)

// Resources that refuse every write while they (or the parent a child is written under) are in a transient state,
// as their resource providers do. ASO checks these states before it sends a PUT (its preReconcileCheck and
// preReconcileOwnerCheck hooks); a client that does not gets the refusal below.
//
// The AKS refusal is the one AKS documents (409 OperationNotAllowed, "Another operation (…) is in progress"); the
// PostgreSQL, Kusto and Cosmos DB codes are modelled (409 ServerIsBusy / OperationNotAllowed, Conflict): the
// conformance recordings hold none of them.

// stateGuard says which property holds a type's state and which states accept writes (lower-cased).
type stateGuard struct {
	field string
	ok    map[string]bool
	// refuse is the error for a write in state s to the resource named name (the guarded one: the resource
	// itself, or the parent of the child being written).
	refuse func(name, s string) *armError
}

var (
	terminalStates = map[string]bool{"succeeded": true, "failed": true, "canceled": true}

	aksGuard = &stateGuard{field: "provisioningState", ok: terminalStates, refuse: func(name, s string) *armError {
		return newARMError(http.StatusConflict, "OperationNotAllowed",
			"Operation is not allowed: Another operation (%s) is in progress, please wait for it to finish before starting a new operation. See https://aka.ms/aks-pending-operation for more details", s)
	}}
	postgresGuard = &stateGuard{field: "state", ok: map[string]bool{"ready": true, "succeeded": true, "failed": true, "canceled": true}, refuse: func(name, s string) *armError {
		if strings.EqualFold(s, "Stopped") || strings.EqualFold(s, "Disabled") {
			return newARMError(http.StatusConflict, "OperationNotAllowed", "Operation is not allowed on server '%s' in state '%s'. Start the server and try again.", name, s)
		}
		return newARMError(http.StatusConflict, "ServerIsBusy", "Server '%s' is busy with another operation (state '%s'). Please try your operation later.", name, s)
	}}
	kustoGuard = &stateGuard{field: "provisioningState", ok: terminalStates, refuse: func(name, s string) *armError {
		return newARMError(http.StatusConflict, "Conflict", "Cluster '%s' is in state '%s' and cannot be modified until the current operation completes.", name, s)
	}}
	cosmosGuard = &stateGuard{field: "provisioningState", ok: map[string]bool{"succeeded": true, "failed": true, "canceled": true, "creating": true, "updating": true}, refuse: func(name, s string) *armError {
		return newARMError(http.StatusConflict, "Conflict", "The resource '%s' is being deleted and cannot be updated.", name)
	}}
)

// ownGuards refuse writes to a resource in a transient state; parentGuards refuse writes of a child under a parent
// in one.
var (
	ownGuards = map[string]*stateGuard{
		"microsoft.containerservice/managedclusters":            aksGuard,
		"microsoft.containerservice/managedclusters/agentpools": aksGuard,
		"microsoft.dbforpostgresql/flexibleservers":             postgresGuard,
		"microsoft.kusto/clusters":                              kustoGuard,
		"microsoft.documentdb/databaseaccounts":                 cosmosGuard,
	}
	parentGuards = map[string]*stateGuard{
		"microsoft.containerservice/managedclusters/agentpools":   aksGuard,
		"microsoft.dbforpostgresql/flexibleservers/databases":     postgresGuard,
		"microsoft.dbforpostgresql/flexibleservers/firewallrules": postgresGuard,
		"microsoft.kusto/clusters/databases":                      kustoGuard,
	}
)

// refuseTransient refuses a write to p when the resource (old, nil on a create) or its parent is in a state that
// rejects writes. Caller holds e.mu.
func (e *Emulator) refuseTransient(p armPath, typeKey string, old map[string]any) *armError {
	if g := parentGuards[typeKey]; g != nil && p.Parent != "" {
		if parent := e.store.get(strings.ToLower(p.Parent)); parent != nil {
			if pm, err := parent.decode(); err == nil {
				if s := getString(pm, "properties", g.field); s != "" && !g.ok[strings.ToLower(s)] {
					return g.refuse(parent.Name, s)
				}
			}
		}
	}
	if g := ownGuards[typeKey]; g != nil && old != nil {
		if s := getString(old, "properties", g.field); s != "" && !g.ok[strings.ToLower(s)] {
			return g.refuse(p.Name, s)
		}
	}
	return nil
}
