package aso

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/diag"
)

var guidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// TestBuiltInRoleTable checks the embedded table: several hundred roles,
// well-formed GUIDs, no name (case-insensitively, as ASO keys them) or GUID
// twice, the well-known ones under their well-known GUIDs, and provenance.
func TestBuiltInRoleTable(t *testing.T) {
	roles := BuiltInRoles()
	if len(roles) < 900 {
		t.Errorf("%d built-in roles, want the several hundred Azure has", len(roles))
	}
	names, guids := map[string]string{}, map[string]string{}
	for i, r := range roles {
		if !guidRE.MatchString(r.GUID) {
			t.Errorf("%q: GUID %q is not a lower-case GUID", r.Name, r.GUID)
		}
		if strings.TrimSpace(r.Name) == "" {
			t.Errorf("role %s has no name", r.GUID)
		}
		if r.Type != "BuiltInRole" {
			t.Errorf("%q: type %q", r.Name, r.Type)
		}
		if o, ok := names[strings.ToLower(r.Name)]; ok {
			t.Errorf("%q and %q have the same name", o, r.Name)
		}
		if o, ok := guids[r.GUID]; ok {
			t.Errorf("%q and %q have the same GUID %s", o, r.Name, r.GUID)
		}
		names[strings.ToLower(r.Name)], guids[r.GUID] = r.Name, r.Name
		if i > 0 && strings.ToLower(roles[i-1].Name) > strings.ToLower(r.Name) {
			t.Errorf("not sorted: %q before %q", roles[i-1].Name, r.Name)
		}
	}
	for name, guid := range map[string]string{
		"Owner":                         "8e3af657-a8ff-443c-a75c-2fe8c4bcb635",
		"Contributor":                   "b24988ac-6180-42a0-ab88-20f7382dd24c",
		"Reader":                        "acdd72a7-3385-48ef-bd42-f606fba81ae7",
		"User Access Administrator":     "18d7d88d-d35e-4fb5-a5c3-7773c20a72d9",
		"AcrPull":                       "7f951dda-4ed3-4680-a7ca-43fe172d538d",
		"Key Vault Secrets User":        "4633458b-17de-408a-b874-0445c86b69e6",
		"Storage Blob Data Contributor": "ba92f5b4-2d11-453d-a403-e96b0029c9fe",
		"Azure Service Bus Data Owner":  "090c5cfd-751d-490a-894a-3ce6f1109419",
		"Network Contributor":           "4d97b98b-1d4f-4787-a291-c67834d212e7",
		"Monitoring Metrics Publisher":  "3913510d-42f4-4e42-8a64-420c390055eb",
		"Reservations Reader":           "582fc458-8989-419f-a480-75249bc5db7e", // assignable at /providers/Microsoft.Capacity only
	} {
		r, ok := LookupBuiltInRole(name)
		if !ok || r.GUID != guid || r.Name != name {
			t.Errorf("LookupBuiltInRole(%q) = %+v, %v; want GUID %s", name, r, ok, guid)
		}
	}
	p := BuiltInRolesProvenance()
	if p.Count != len(roles) || p.Source == "" || p.CrossCheck == "" || p.GeneratedAt == "" {
		t.Errorf("provenance %+v does not describe the %d roles", p, len(roles))
	}
}

// TestBuiltInRolesAgreeWithEmulator: every built-in role the emulator serves
// has the table's GUID, name and description.
func TestBuiltInRolesAgreeWithEmulator(t *testing.T) {
	emu := emulator.BuiltinRoles()
	if len(emu) == 0 {
		t.Fatal("the emulator has no built-in roles")
	}
	for _, e := range emu {
		r, ok := LookupBuiltInRole(e.RoleName)
		switch {
		case !ok:
			t.Errorf("emulator role %q is not in the table", e.RoleName)
		case r.GUID != e.GUID || r.Name != e.RoleName:
			t.Errorf("emulator role %q %s, table %q %s", e.RoleName, e.GUID, r.Name, r.GUID)
		case e.RoleType != "BuiltInRole":
			t.Errorf("emulator role %q has type %q", e.RoleName, e.RoleType)
		}
	}
}

func TestRoleDefinitionID(t *testing.T) {
	const contributor = "b24988ac-6180-42a0-ab88-20f7382dd24c"
	for _, tt := range []struct{ name, scope, want string }{
		{"Contributor", "/subscriptions/S1/resourceGroups/rg", "/subscriptions/S1/providers/Microsoft.Authorization/roleDefinitions/" + contributor},
		{"contributor", "/subscriptions/S1", "/subscriptions/S1/providers/Microsoft.Authorization/roleDefinitions/" + contributor},
		{"CONTRIBUTOR", "/SUBSCRIPTIONS/S2/resourceGroups/rg/providers/Microsoft.Storage/storageAccounts/sa", "/subscriptions/S2/providers/Microsoft.Authorization/roleDefinitions/" + contributor},
		// the assignment's own ID gives the same subscription
		{"Contributor", "/subscriptions/S1/resourceGroups/rg/providers/Microsoft.Authorization/roleAssignments/x", "/subscriptions/S1/providers/Microsoft.Authorization/roleDefinitions/" + contributor},
		// arm.ParseResourceID has no subscription for these: ASO sends /subscriptions//…
		{"Contributor", "/providers/Microsoft.Management/managementGroups/mg", "/subscriptions//providers/Microsoft.Authorization/roleDefinitions/" + contributor},
		{"Reservations Reader", "/providers/Microsoft.Capacity", "/subscriptions//providers/Microsoft.Authorization/roleDefinitions/582fc458-8989-419f-a480-75249bc5db7e"},
		{"Contributor", "/", "/subscriptions//providers/Microsoft.Authorization/roleDefinitions/" + contributor},
	} {
		got, err := RoleDefinitionID(tt.name, tt.scope)
		if err != nil || got != tt.want {
			t.Errorf("RoleDefinitionID(%q, %q) = %q, %v; want %q", tt.name, tt.scope, got, err, tt.want)
		}
	}
	// Azure's one roleName with a trailing space matches only with it, as in ASO.
	if _, ok := LookupBuiltInRole("azure arc vmware administrator role "); !ok {
		t.Error(`"Azure Arc VMware Administrator role " (trailing space) not found`)
	}
	if _, err := RoleDefinitionID("Reader", "/resourceGroups/rg"); err == nil {
		t.Error("a scope that is no ARM ID gave a role ID")
	}
}

func TestUnknownRole(t *testing.T) {
	for _, tt := range []struct{ name, want string }{
		{"Contributer", `unknown built-in role "Contributer": did you mean "Contributor"?`},
		{"storage blob data contributer", `unknown built-in role "storage blob data contributer": did you mean "Storage Blob Data Contributor"?`},
		{"Key Vault Secret User", `unknown built-in role "Key Vault Secret User": did you mean "Key Vault Secrets User"?`},
		{"acrpul", `unknown built-in role "acrpul": did you mean "AcrPull"`},
		{"Blob Data Owner", `unknown built-in role "Blob Data Owner": did you mean "Storage Blob Data Owner"?`},
		{"My Custom Role Xyz", `unknown built-in role "My Custom Role Xyz" (wellKnownName takes the name of one of Azure's built-in roles`},
	} {
		_, err := RoleDefinitionID(tt.name, "/subscriptions/s")
		var ue *UnknownRoleError
		if !errors.As(err, &ue) || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("RoleDefinitionID(%q): %v; want %s", tt.name, err, tt.want)
		}
	}
}

// TestValidateWellKnownName: validate refuses a misspelt role naming the
// field, and accepts any case; a container app's wellKnownName is no role.
func TestValidateWellKnownName(t *testing.T) {
	ra := func(name string) map[string]any {
		return mustParse(t, `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra}
spec:
  owner: {armId: /subscriptions/s/resourceGroups/rg}
  principalId: p
  roleDefinitionReference: {wellKnownName: "`+name+`"}
`)
	}
	k := mustKind(t, "authorization.azure.com/v1api20220401", "RoleAssignment")
	if errs := Validate(k, ra("key vault SECRETS user")); len(errs) != 0 {
		t.Errorf("a built-in role in another case is refused: %v", errs)
	}
	errs := Validate(k, ra("Contributer"))
	want := diag.List{{Field: "spec.roleDefinitionReference.wellKnownName", Msg: `unknown built-in role "Contributer": did you mean "Contributor"?`}}
	if len(errs) != 1 || errs[0].Field != want[0].Field || errs[0].Msg != want[0].Msg {
		t.Errorf("Validate = %v, want %v", errs, want)
	}
	old := mustKind(t, "authorization.azure.com/v1api20200801preview", "RoleAssignment")
	if errs := Validate(old, ra("Contributer")); len(errs) != 1 {
		t.Errorf("v1api20200801preview: %v, want the unknown role", errs)
	}
	app := mustParse(t, `
apiVersion: app.azure.com/v1api20250101
kind: ContainerApp
metadata: {name: app}
spec:
  owner: {name: rg}
  location: westeurope
  configuration: {registries: [{server: r.azurecr.io, identityReference: {wellKnownName: system}}]}
`)
	if errs := Validate(mustKind(t, "app.azure.com/v1api20250101", "ContainerApp"), app); len(errs) != 0 {
		t.Errorf("container app identityReference: %v", errs)
	}
}
