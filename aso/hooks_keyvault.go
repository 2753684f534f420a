package aso

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
)

// ASO's Key Vault hook (api/keyvault/customizations/vault_extensions.go):
// createMode values ARM does not know, resolved before the PUT.

// KeyVaultAPIVersion is the api-version of the Key Vault SDK client ASO uses
// for deleted vaults (armkeyvault v1.5.0), not the Vault kind's.
const KeyVaultAPIVersion = "2024-11-01"

// The Vault createMode values: ARM's default and recover, and ASO's
// createOrRecover and purgeThenCreate.
const (
	CreateModeDefault         = "default"
	CreateModeRecover         = "recover"
	CreateModeCreateOrRecover = "createOrRecover"
	CreateModePurgeThenCreate = "purgeThenCreate"
)

var createModePath = []string{"properties", "createMode"}

func init() {
	register("keyvault.azure.com", "Vault").ModifyPayload = vaultCreateMode
}

// vaultCreateMode resolves ASO's createMode values that ARM does not know:
// createOrRecover becomes recover when a soft-deleted vault of the same name
// exists in the location (in the same resource group, else the apply fails
// fatally), and default otherwise; purgeThenCreate purges such a vault,
// then sends default. Other values are sent as written.
func vaultCreateMode(ctx context.Context, arm ARM, t Target, body []byte) ([]byte, error) {
	mode := stringAt(body, createModePath...)
	if mode != CreateModeCreateOrRecover && mode != CreateModePurgeThenCreate {
		return body, nil
	}
	location := stringAt(body, "location")
	if location == "" {
		// ASO cannot look for a soft-deleted vault: createOrRecover fails
		// (a Warning), purgeThenCreate assumes there is none.
		if mode == CreateModeCreateOrRecover {
			return nil, fmt.Errorf("error checking for existence of soft-deleted KeyVault: unable to determine location of KeyVault %s", t.AzureName)
		}
		return setPath(body, createModePath, marshalJSON(CreateModeDefault))
	}
	deletedPath := DeletedVaultPath(t.ARMID, location, t.AzureName)
	deleted, err := arm.Get(ctx, deletedPath, KeyVaultAPIVersion)
	exists := err == nil
	if err != nil && !IsNotFound(err) {
		if mode == CreateModeCreateOrRecover {
			return nil, fmt.Errorf("error checking for existence of soft-deleted KeyVault %s: %w", t.AzureName, err)
		}
		// ASO assumes no soft-deleted vault when it cannot tell.
		logger(ctx).WarnContext(ctx, "cannot check for a soft-deleted key vault; assuming none", "vault", t.AzureName, "error", err)
	}
	result := CreateModeDefault
	switch mode {
	case CreateModeCreateOrRecover:
		if exists {
			if err := sameResourceGroup(t.ARMID, deleted); err != nil {
				return nil, err
			}
			result = CreateModeRecover
		}
	case CreateModePurgeThenCreate:
		if exists {
			if _, err := arm.Post(ctx, deletedPath+"/purge", KeyVaultAPIVersion, nil); err != nil {
				return nil, fmt.Errorf("failed to purge deleted KeyVault %s: %w", t.AzureName, err)
			}
		}
	}
	logger(ctx).InfoContext(ctx, "key vault create mode", "vault", t.AzureName, "requested", mode, "softDeletedExists", exists, "createMode", result)
	return setPath(body, createModePath, marshalJSON(result))
}

// DeletedVaultPath is the ARM path of the soft-deleted vault that a vault
// of that name leaves in location.
func DeletedVaultPath(vaultID, location, name string) string {
	return fmt.Sprintf("/subscriptions/%s/providers/Microsoft.KeyVault/locations/%s/deletedVaults/%s",
		SubscriptionOf(vaultID), url.PathEscape(location), url.PathEscape(name))
}

// sameResourceGroup fails (fatally, as ASO does) when the soft-deleted vault
// was in another resource group than the one the manifest asks for.
func sameResourceGroup(vaultID string, deleted []byte) error {
	had := idResourceGroup(stringAt(deleted, "properties", "vaultId"))
	want := idResourceGroup(vaultID)
	if want != "" && had != "" && !strings.EqualFold(want, had) {
		return &ConditionError{Reason: ReasonFailed, Fatal: true,
			Message: fmt.Sprintf("cannot recover KeyVault: new resourceGroup %s does not match old resource group %s", want, had)}
	}
	return nil
}

// PlannedBody is a request body as the plan shows it: the fields ASO's
// payload hooks rewrite hold what ARM will receive, or UnknownValue where
// only the apply can tell.
type PlannedBody struct {
	JSON []byte
	// Unknown are the JSON pointers now holding UnknownValue.
	Unknown []string
	// Instructions are the JSON pointers of rewritten fields that ARM
	// takes as an instruction and does not report back (a vault's
	// createMode): they are not compared with Azure.
	Instructions []string
}

// PlanPayload returns the body the plan shows for a converted body of a
// kind. exists says whether the plan read the resource from Azure and found
// it. For a Vault, purgeThenCreate shows default (what ARM receives, after a
// purge the apply does when needed); createOrRecover shows default when the
// vault exists (no soft-deleted vault can then exist) and is known after
// apply otherwise (default or recover, decided by the apply's look-up of a
// soft-deleted vault). Bodies of other kinds are returned unchanged.
func PlanPayload(group, kind string, body []byte, exists bool) (PlannedBody, error) {
	out := PlannedBody{JSON: body}
	if group != "keyvault.azure.com" || kind != "Vault" {
		return out, nil
	}
	mode := stringAt(body, createModePath...)
	shown := ""
	switch {
	case mode == CreateModePurgeThenCreate, mode == CreateModeCreateOrRecover && exists:
		shown = CreateModeDefault
	case mode == CreateModeCreateOrRecover:
		shown = UnknownValue
		out.Unknown = []string{"/properties/createMode"}
	default:
		return out, nil
	}
	b, err := setPath(body, createModePath, marshalJSON(shown))
	if err != nil {
		return out, fmt.Errorf("createMode: %w", err)
	}
	out.JSON = b
	out.Instructions = []string{"/properties/createMode"}
	return out, nil
}

// idResourceGroup is the resource group of an ARM ID, or "".
func idResourceGroup(id string) string {
	parts := strings.Split(id, "/")
	for i := 0; i+1 < len(parts); i++ {
		if strings.EqualFold(parts[i], "resourceGroups") {
			return parts[i+1]
		}
	}
	return ""
}

// jsonOf decodes b into v, ignoring errors (hooks read ARM's answers
// leniently: a missing or mistyped member reads as its zero value).
func jsonOf(b []byte, v any) { _ = json.Unmarshal(b, v) }
