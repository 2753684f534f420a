package emulator

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode"
)

// Resource names ARM and the resource providers refuse on create, and checkNameAvailability, which answers whether
// a globally unique name can be taken:
//
//   - resource groups: 1 to 90 letters, digits, '-', '_', '.', '(' and ')', not ending in '.' (400
//     InvalidResourceGroup, as ARM answers);
//   - storage accounts: 3 to 24 lower-case letters and digits (400 AccountNameInvalid); POST
//     /subscriptions/{id}/providers/Microsoft.Storage/checkNameAvailability {"name", "type"} answers
//     {nameAvailable, reason: AccountNameInvalid|AlreadyExists, message};
//   - Key Vaults: 3 to 24 letters, digits and '-', starting with a letter, ending with a letter or digit, no "--"
//     (400 VaultNameNotValid); checkNameAvailability also counts soft-deleted vaults (AlreadyExists);
//   - Service Bus namespaces: 6 to 50 letters, digits and '-', starting with a letter, ending with a letter or digit
//     (400 BadRequest); CheckNameAvailability answers {nameAvailable, reason: None|InvalidName|NameInUse, message}.
//
// Storage account, Key Vault and Service Bus namespace names are global: taken in any subscription of the emulator.

var (
	storageNameRE = regexp.MustCompile(`^[a-z0-9]{3,24}$`)
	vaultNameRE   = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{1,22}[a-zA-Z0-9]$`)
	sbNameRE      = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]{4,48}[a-zA-Z0-9]$`)
)

const (
	sbNamespaceTypeKey = "microsoft.servicebus/namespaces"
	storageNameRule    = "Storage account name must be between 3 and 24 characters in length and use numbers and lower-case letters only."
	vaultNameRule      = "A vault's name must be between 3-24 alphanumeric characters. The name must begin with a letter, end with a letter or digit, and not contain consecutive hyphens."
)

func validVaultName(n string) bool { return vaultNameRE.MatchString(n) && !strings.Contains(n, "--") }

func validSBName(n string) bool {
	return sbNameRE.MatchString(n) && !strings.HasSuffix(strings.ToLower(n), "-sb") && !strings.HasSuffix(strings.ToLower(n), "-mgmt")
}

// invalidRGNameChars returns the characters of a resource group name ARM refuses, "" when it is valid.
func invalidRGNameChars(n string) string {
	var bad []string
	for _, r := range n {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-_.()", r) {
			continue
		}
		if s := string(r); !strings.Contains(strings.Join(bad, ""), s) {
			bad = append(bad, s)
		}
	}
	return strings.Join(bad, "")
}

// nameError returns the error ARM or the resource provider answers for an invalid name on create, nil when the
// name is valid or not checked.
func nameError(typeKey, name string) *armError {
	switch typeKey {
	case rgTypeKey:
		if bad := invalidRGNameChars(name); bad != "" {
			return newARMError(http.StatusBadRequest, "InvalidResourceGroup",
				"The provided resource group name '%s' has these invalid characters: '%s'. The name can only be a letter, digit, '-', '.', '(', ')' or '_'.", name, bad)
		}
		if len(name) > 90 || strings.HasSuffix(name, ".") {
			return newARMError(http.StatusBadRequest, "InvalidResourceGroup",
				"The provided resource group name '%s' is invalid. It can be at most 90 characters long and cannot end with a period.", name)
		}
	case storageTypeKey:
		if !storageNameRE.MatchString(name) {
			return newARMError(http.StatusBadRequest, "AccountNameInvalid", "%s is not a valid storage account name. %s", name, storageNameRule)
		}
	case vaultTypeKey:
		if !validVaultName(name) {
			return newARMError(http.StatusBadRequest, "VaultNameNotValid", "The vault name '%s' is invalid. %s", name, vaultNameRule)
		}
	case sbNamespaceTypeKey:
		if !validSBName(name) {
			return newARMError(http.StatusBadRequest, "BadRequest",
				"The specified service namespace is invalid. The name must be 6 to 50 characters long, start with a letter, end with a letter or number, and contain only letters, numbers and hyphens; it cannot end with '-sb' or '-mgmt'.")
		}
	}
	return nil
}

// nameTaken reports whether a globally unique name of typeKey is used in any subscription. Caller holds e.mu.
func (e *Emulator) nameTaken(typeKey, name string) bool {
	for _, r := range e.store.ofType(typeKey, "") {
		if strings.EqualFold(r.Name, name) {
			return true
		}
	}
	return false
}

// serveCheckName answers POST /subscriptions/{id}/providers/{namespace}/checkNameAvailability.
func (e *Emulator) serveCheckName(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) bool {
	var typeKey string
	switch strings.ToLower(p.Namespace) {
	case "microsoft.storage":
		typeKey = storageTypeKey
	case "microsoft.keyvault":
		typeKey = vaultTypeKey
	case "microsoft.servicebus":
		typeKey = sbNamespaceTypeKey
	default:
		return false
	}
	if !e.authorize(w, c, p.Namespace+"/checkNameAvailability/read", p.Parent, info) {
		return true
	}
	var in struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if !e.decodeBody(w, r, info, &in) {
		return true
	}
	if typeKey != sbNamespaceTypeKey && !strings.EqualFold(in.Type, namespaceOf(p.Namespace)+"/"+map[string]string{storageTypeKey: "storageAccounts", vaultTypeKey: "vaults"}[typeKey]) {
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidRequestContent",
			"The request content was invalid: the type '%s' is not one whose name availability can be checked here.", in.Type))
		return true
	}
	e.mu.RLock()
	taken := e.nameTaken(typeKey, in.Name)
	softDeleted := typeKey == vaultTypeKey && e.deletedVaults[strings.ToLower(in.Name)] != nil
	e.mu.RUnlock()
	var out map[string]any
	switch typeKey {
	case storageTypeKey:
		switch {
		case !storageNameRE.MatchString(in.Name):
			out = map[string]any{"nameAvailable": false, "reason": "AccountNameInvalid", "message": fmt.Sprintf("%s is not a valid storage account name. %s", in.Name, storageNameRule)}
		case taken:
			out = map[string]any{"nameAvailable": false, "reason": "AlreadyExists", "message": fmt.Sprintf("The storage account named %s is already taken.", in.Name)}
		default:
			out = map[string]any{"nameAvailable": true}
		}
	case vaultTypeKey:
		switch {
		case !validVaultName(in.Name):
			out = map[string]any{"nameAvailable": false, "reason": "AccountNameInvalid", "message": fmt.Sprintf("The vault name '%s' is invalid. %s", in.Name, vaultNameRule)}
		case taken || softDeleted:
			out = map[string]any{"nameAvailable": false, "reason": "AlreadyExists", "message": fmt.Sprintf("The vault name '%s' is already in use. Vault names are globally unique so it is possible that the name is already taken. If you are sure that the vault name was not taken then it is possible that a vault with the same name was recently deleted but not purged after being placed in a recoverable state. If the vault is in a recoverable state then the vault will need to be explicitly purged before being recreated.", in.Name)}
		default:
			out = map[string]any{"nameAvailable": true}
		}
	case sbNamespaceTypeKey:
		switch {
		case !validSBName(in.Name):
			out = map[string]any{"nameAvailable": false, "reason": "InvalidName", "message": "The specified name is not valid. The name must be 6 to 50 characters long, start with a letter, end with a letter or number, and contain only letters, numbers and hyphens."}
		case taken:
			out = map[string]any{"nameAvailable": false, "reason": "NameInUse", "message": fmt.Sprintf("The specified name '%s' is not available. For more information visit https://aka.ms/sbResourceMgrExceptions.", in.Name)}
		default:
			out = map[string]any{"nameAvailable": true, "reason": "None", "message": ""}
		}
	}
	writeJSON(w, http.StatusOK, out)
	return true
}
