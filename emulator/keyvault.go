package emulator

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"time"
)

// Key Vault soft delete, as real ARM does it: deleting a vault (directly or with its resource group) keeps it as a
// deleted vault at /subscriptions/{sub}/providers/Microsoft.KeyVault/locations/{location}/deletedVaults/{name} until
// it is purged (POST .../purge, a 202 LRO) or recovered (PUT of the vault with properties.createMode "recover").
// Vault names are global, so a soft-deleted vault blocks a create of that name (409 ConflictError) anywhere.

const (
	vaultTypeKey        = "microsoft.keyvault/vaults"
	deletedVaultTypeKey = "microsoft.keyvault/locations/deletedvaults"
	deletedVaultType    = "Microsoft.KeyVault/deletedVaults"
	defaultRetention    = 90 // days, properties.softDeleteRetentionInDays when unset
)

// deletedVault is a soft-deleted vault. Body is the vault as it was (restored by a recover).
type deletedVault struct {
	Name      string          `json:"name"`
	VaultID   string          `json:"vaultId"`
	Location  string          `json:"location"`
	Sub       string          `json:"subscription"`
	Deleted   time.Time       `json:"deletionDate"`
	PurgeDate time.Time       `json:"scheduledPurgeDate"`
	Body      json.RawMessage `json:"body"`
}

func (d *deletedVault) id() string {
	return "/subscriptions/" + d.Sub + "/providers/Microsoft.KeyVault/locations/" + normalizeRegion(d.Location) + "/deletedVaults/" + d.Name
}

// json renders the deleted vault as the DeletedVault model of the Key Vault API.
func (d *deletedVault) json() map[string]any {
	props := map[string]any{
		"vaultId": d.VaultID, "location": normalizeRegion(d.Location),
		"deletionDate": armTime(d.Deleted), "scheduledPurgeDate": armTime(d.PurgeDate),
		"purgeProtectionEnabled": false, "tags": map[string]any{},
	}
	var vault resource
	vault.body = d.Body
	if m, err := vault.decode(); err == nil {
		if t, ok := m["tags"].(map[string]any); ok {
			props["tags"] = t
		}
		if pp, ok := getPath(m, "properties", "enablePurgeProtection"); ok && pp == true {
			props["purgeProtectionEnabled"] = true
		}
	}
	return map[string]any{"id": d.id(), "name": d.Name, "type": deletedVaultType, "properties": props}
}

// softDeleteVault records a removed vault as deleted. Caller holds e.mu (write).
func (e *Emulator) softDeleteVault(r *resource) {
	m, err := r.decode()
	if err != nil {
		return
	}
	days := defaultRetention
	if v, ok := getPath(m, "properties", "softDeleteRetentionInDays"); ok {
		if f, ok := v.(float64); ok && f >= 7 && f <= 90 {
			days = int(f)
		}
	}
	now := nowUTC()
	e.deletedVaults[strings.ToLower(r.Name)] = &deletedVault{
		Name: r.Name, VaultID: r.ID, Location: r.Location, Sub: subOfKey(r), Deleted: now,
		PurgeDate: now.Add(time.Duration(days) * 24 * time.Hour), Body: r.body,
	}
	e.markDirty()
}

// prepareVault applies createMode to a vault create: a soft-deleted vault of the name conflicts unless the mode is
// recover, which restores it (its former properties win, as in Azure). It returns the body to store and whether it
// is a recovery (the caller drops the deleted vault once the vault is stored). Caller holds e.mu (write).
func (e *Emulator) prepareVault(p armPath, body map[string]any) (map[string]any, bool, *armError) {
	name := strings.ToLower(p.Name)
	d := e.deletedVaults[name]
	mode := getString(body, "properties", "createMode")
	if !strings.EqualFold(mode, "recover") {
		if d != nil {
			return nil, false, newARMError(http.StatusConflict, "ConflictError",
				"A vault with the same name already exists in deleted state. You need to either recover or purge existing key vault. Follow this link https://go.microsoft.com/fwlink/?linkid=2149745 for more information on soft delete.")
		}
		return body, false, nil
	}
	if d == nil || !strings.EqualFold(d.VaultID, p.ID) {
		return nil, false, newARMError(http.StatusNotFound, "SoftDeletedVaultDoesNotExist",
			"A soft deleted vault with the given name does not exist. Ensure that the name for the vault that is being attempted to recover is in a recoverable state. For more information, go to https://go.microsoft.com/fwlink/?linkid=2149745")
	}
	var vault resource
	vault.body = d.Body
	restored, err := vault.decode()
	if err != nil {
		return nil, false, newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err)
	}
	ensureObject(restored, "properties")["createMode"] = mode
	return restored, true, nil
}

// serveDeletedVault answers GET of a deleted vault and POST .../purge.
func (e *Emulator) serveDeletedVault(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo, purge bool, apiVersion string) {
	id := p.ID
	if purge {
		id = p.Parent
	}
	dp := parseARMPath(id)
	switch {
	case purge && r.Method != http.MethodPost, !purge && r.Method != http.MethodGet && r.Method != http.MethodHead:
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed.")
		return
	}
	action := "Microsoft.KeyVault/locations/deletedVaults/read"
	if purge {
		action = "Microsoft.KeyVault/locations/deletedVaults/purge/action"
	}
	if !e.authorize(w, c, action, id, info) {
		return
	}
	segs := strings.Split(strings.Trim(dp.Parent, "/"), "/")
	region := normalizeRegion(segs[len(segs)-1])
	e.mu.Lock()
	d := e.deletedVaults[strings.ToLower(dp.Name)]
	if d != nil && (!strings.EqualFold(d.Sub, dp.Sub) || normalizeRegion(d.Location) != region) {
		d = nil
	}
	var op *operation
	protected := d != nil && purge && d.json()["properties"].(map[string]any)["purgeProtectionEnabled"] == true
	if d != nil && purge && !protected {
		delete(e.deletedVaults, strings.ToLower(dp.Name))
		e.markDirty()
		// The purge completes at the first poll: its operation tracks a resource no longer stored.
		op = e.startOp(newResource(dp, d.Location, nil), opDelete, false, apiVersion, nil)
	}
	e.mu.Unlock()
	if d == nil {
		e.writeErr(w, info, newARMError(http.StatusNotFound, "ResourceNotFound", "The Resource '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", resourcePath(id)))
		return
	}
	if protected {
		// Purge protection: the vault is purged only when its retention ends (scheduledPurgeDate).
		e.writeErr(w, info, newARMError(http.StatusMethodNotAllowed, "MethodNotAllowed", "Operation 'DeletedVaultPurge' is not allowed."))
		return
	}
	if purge {
		w.Header().Set("Location", e.opURL(op, true))
		e.setRetryHeaders(w.Header(), 0)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	writeJSON(w, http.StatusOK, d.json())
}

// serveDeletedVaultList answers GET /subscriptions/{sub}/providers/Microsoft.KeyVault/deletedVaults.
func (e *Emulator) serveDeletedVaultList(w http.ResponseWriter, p armPath, c *accessClaims, info *reqInfo) {
	if !e.authorize(w, c, "Microsoft.KeyVault/locations/deletedVaults/read", p.Parent, info) {
		return
	}
	e.mu.RLock()
	var ds []*deletedVault
	for _, d := range e.deletedVaults {
		if strings.EqualFold(d.Sub, p.Sub) {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool { return strings.ToLower(ds[i].Name) < strings.ToLower(ds[j].Name) })
	values := make([]any, 0, len(ds))
	for _, d := range ds {
		values = append(values, d.json())
	}
	e.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"value": values})
}

// prepareVaultProperties applies Key Vault's irreversible settings to a create or an update (old is nil on create):
// soft delete cannot be turned off, purge protection cannot be set to false (on a create either: Azure accepts
// only true or nothing), and a vault that has purge protection keeps it when a PUT omits it.
func prepareVaultProperties(body, old map[string]any) *armError {
	props, _ := body["properties"].(map[string]any)
	if props == nil {
		return nil
	}
	if v, ok := props["enableSoftDelete"]; ok && v == false {
		return newARMError(http.StatusBadRequest, "BadRequest", "The property \"enableSoftDelete\" cannot be set to false. Enabling the soft delete for a vault is an irreversible action.")
	}
	v, set := props["enablePurgeProtection"]
	if set && v == false {
		return newARMError(http.StatusBadRequest, "BadRequest", "The property \"enablePurgeProtection\" cannot be set to false. Enabling the purge protection for a vault is an irreversible action.")
	}
	if was, _ := getPath(old, "properties", "enablePurgeProtection"); was == true && (!set || v == nil) {
		props["enablePurgeProtection"] = true
	}
	return nil
}
