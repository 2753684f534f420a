package aso

import (
	"encoding/json"
	"strings"
)

// ASO's dataprotection hook
// (api/dataprotection/customizations/backup_vaults_backup_instance_extensions.go):
// a backup instance is Ready once its protection has reached a terminal
// state.

func init() {
	register("dataprotection.azure.com", "BackupVaultsBackupInstance").PostReconcile = backupInstanceProtected
}

// backupInstanceTerminalStates are the protection states from which nothing
// changes by itself (lower-cased, as ASO compares them).
var backupInstanceTerminalStates = map[string]bool{
	"configuringprotectionfailed": true,
	"invalid":                     true,
	"notprotected":                true,
	"protectionconfigured":        true,
	"softdeleted":                 true,
	"protectionstopped":           true,
	"backupschedulessuspended":    true,
	"retentionschedulessuspended": true,
}

// backupInstanceProtected is the post-reconcile check. Without a protection
// status the instance is Ready (ASO defers to the default, which succeeds);
// in a terminal state it is Ready; in ProtectionError with a user error it
// asks for a sync of the instance (POST {id}/sync, syncType Default) and
// waits; in any other state it waits.
func backupInstanceProtected(t Target, status []byte) PostResult {
	var bi struct {
		ID         string `json:"id"`
		Properties struct {
			ProtectionStatus *struct {
				Status       *string `json:"status"`
				ErrorDetails *struct {
					Code *string `json:"code"`
				} `json:"errorDetails"`
			} `json:"protectionStatus"`
		} `json:"properties"`
	}
	jsonOf(status, &bi)
	ps := bi.Properties.ProtectionStatus
	if bi.ID == "" || ps == nil || ps.Status == nil {
		return PostResult{Ready: true}
	}
	st := strings.ToLower(*ps.Status)
	if backupInstanceTerminalStates[st] {
		return PostResult{Ready: true}
	}
	res := PostResult{Message: "Backup Instance is in non terminal state"}
	if st == "protectionerror" && ps.ErrorDetails != nil && ps.ErrorDetails.Code != nil &&
		strings.Contains(strings.ToLower(*ps.ErrorDetails.Code), "usererror") {
		body, _ := json.Marshal(map[string]string{"syncType": "Default"})
		res.Then = &Call{Method: "POST", Path: t.ARMID + "/sync", APIVersion: t.APIVersion, Body: body}
	}
	return res
}
