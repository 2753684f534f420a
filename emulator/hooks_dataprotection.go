package emulator

import (
	"net/http"
	"strings"
)

// Backup instances (Microsoft.DataProtection/backupVaults/backupInstances) report properties.protectionStatus,
// which Azure owns: a new instance is ProtectionConfigured, a PUT keeps the stored status, and a test puts an
// instance into another state with SetResourceProperties (ConfiguringProtection, or ProtectionError with
// errorDetails.code UserError…). POST {id}/sync ("syncType": "Default") re-syncs the instance: a protection error
// becomes ProtectionConfigured again.

const (
	backupInstanceType    = "Microsoft.DataProtection/backupVaults/backupInstances"
	backupInstanceTypeKey = "microsoft.dataprotection/backupvaults/backupinstances"
)

// prepareBackupInstance keeps (or starts) the protection status. Caller holds e.mu (write).
func prepareBackupInstance(body, old map[string]any) {
	props := ensureObject(body, "properties")
	if st, ok := getPath(old, "properties", "protectionStatus"); ok {
		props["protectionStatus"] = st
		return
	}
	props["protectionStatus"] = map[string]any{"status": "ProtectionConfigured"}
}

// serveSyncBackupInstance answers POST {backupInstance}/sync.
func (e *Emulator) serveSyncBackupInstance(w http.ResponseWriter, p armPath, c *accessClaims, info *reqInfo) {
	if !e.authorize(w, c, "Microsoft.DataProtection/backupVaults/backupInstances/sync/action", p.Parent, info) {
		return
	}
	e.mu.Lock()
	res := e.store.get(strings.ToLower(p.Parent))
	if res == nil {
		aerr := e.notFound(parseARMPath(p.Parent))
		e.mu.Unlock()
		e.writeErr(w, info, aerr)
		return
	}
	if m, err := res.decode(); err == nil {
		if strings.EqualFold(getString(m, "properties", "protectionStatus", "status"), "ProtectionError") {
			ensureObject(m, "properties")["protectionStatus"] = map[string]any{"status": "ProtectionConfigured"}
			res.body = mustJSON(m)
			e.markDirty()
		}
	}
	e.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}
