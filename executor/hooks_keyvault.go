package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// keyVaultAPIVersion is the api-version of the Key Vault SDK client ASO uses
// for deleted vaults (armkeyvault v1.5.0), not the Vault kind's.
const keyVaultAPIVersion = "2024-11-01"

// The Vault createMode values ASO adds to ARM's default and recover.
const (
	createModeDefault         = "default"
	createModeRecover         = "recover"
	createModeCreateOrRecover = "createOrRecover"
	createModePurgeThenCreate = "purgeThenCreate"
)

// vaultCreateMode resolves ASO's createMode values that ARM does not know:
// createOrRecover becomes recover when a soft-deleted vault of the same name
// exists in the location (in the same resource group, else the apply fails),
// and default otherwise; purgeThenCreate purges such a vault, then sends
// default.
func (w *walk) vaultCreateMode(ctx context.Context, cli ARM, r *planner.Resource, body []byte) ([]byte, error) {
	raw, ok := rawAt(body, "properties", "createMode")
	if !ok {
		return body, nil
	}
	var mode string
	if json.Unmarshal(raw, &mode) != nil || (mode != createModeCreateOrRecover && mode != createModePurgeThenCreate) {
		return body, nil
	}
	var top struct {
		Location string `json:"location"`
	}
	_ = json.Unmarshal(body, &top)
	if top.Location == "" {
		return nil, &statusError{reason: "Failed", severity: record.SeverityError,
			msg: fmt.Sprintf("createMode %s needs the vault's location to look for a soft-deleted vault", mode)}
	}
	deletedPath := deletedVaultPath(r.ARMID, top.Location, r.AzureName)
	deleted, err := cli.Get(ctx, deletedPath, keyVaultAPIVersion)
	exists := err == nil
	if err != nil && !isNotFound(err) {
		if mode == createModeCreateOrRecover {
			return nil, fmt.Errorf("check for a soft-deleted key vault %s: %w", r.AzureName, err)
		}
		// ASO assumes no soft-deleted vault when it cannot tell.
		w.e.opts.Logger.WarnContext(ctx, "cannot check for a soft-deleted key vault; assuming none", "resource", r.ID(), "error", err)
	}
	result := createModeDefault
	switch mode {
	case createModeCreateOrRecover:
		if exists {
			if err := sameResourceGroup(r.ARMID, deleted); err != nil {
				return nil, err
			}
			result = createModeRecover
		}
	case createModePurgeThenCreate:
		if exists {
			if _, err := cli.Post(ctx, deletedPath+"/purge", keyVaultAPIVersion, nil); err != nil {
				return nil, fmt.Errorf("purge soft-deleted key vault %s: %w", r.AzureName, err)
			}
		}
	}
	w.e.opts.Logger.InfoContext(ctx, "key vault create mode", "resource", r.ID(), "requested", mode, "softDeletedExists", exists, "createMode", result)
	return setPath(body, []string{"properties", "createMode"}, marshalJSON(result))
}

func deletedVaultPath(vaultID, location, name string) string {
	return fmt.Sprintf("/subscriptions/%s/providers/Microsoft.KeyVault/locations/%s/deletedVaults/%s",
		subscriptionOf(vaultID), url.PathEscape(location), url.PathEscape(name))
}

// sameResourceGroup fails (fatally, as ASO does) when the soft-deleted vault
// was in another resource group than the one the manifest asks for.
func sameResourceGroup(vaultID string, deleted []byte) error {
	var dv struct {
		Properties struct {
			VaultID string `json:"vaultId"`
		} `json:"properties"`
	}
	if json.Unmarshal(deleted, &dv) != nil || dv.Properties.VaultID == "" {
		return nil
	}
	want, had := resourceGroupOf(vaultID), resourceGroupOf(dv.Properties.VaultID)
	if want != "" && had != "" && !strings.EqualFold(want, had) {
		return &statusError{reason: "Failed", severity: record.SeverityError,
			msg: fmt.Sprintf("cannot recover KeyVault: new resourceGroup %s does not match old resource group %s", want, had)}
	}
	return nil
}

func resourceGroupOf(id string) string {
	parts := strings.Split(id, "/")
	for i := 0; i+1 < len(parts); i++ {
		if strings.EqualFold(parts[i], "resourceGroups") {
			return parts[i+1]
		}
	}
	return ""
}
