package executor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/gitaso/gitaso/planner"
)

// roleDefinitionsAPIVersion is the api-version ASO lists role definitions with.
const roleDefinitionsAPIVersion = "2022-04-01"

// hooks applies the payload modifiers ASO runs after conversion.
func (w *walk) hooks(ctx context.Context, cli ARM, r *planner.Resource, body []byte) ([]byte, error) {
	if r.Group == "authorization.azure.com" && r.Kind == "RoleAssignment" {
		return w.resolveWellKnownRole(ctx, cli, r, body)
	}
	return body, nil
}

// resolveWellKnownRole replaces a roleDefinitionId that holds a built-in
// role's name (roleDefinitionReference.wellKnownName) with the role's ID, as
// ASO does: list role definitions, keep BuiltInRole ones, match roleName
// case-insensitively, and build the ID in the assignment's subscription.
func (w *walk) resolveWellKnownRole(ctx context.Context, cli ARM, r *planner.Resource, body []byte) ([]byte, error) {
	var doc struct {
		Properties struct {
			RoleDefinitionID string `json:"roleDefinitionId"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("read role assignment body: %w", err)
	}
	name := doc.Properties.RoleDefinitionID
	if name == "" || strings.HasPrefix(name, "/") {
		return body, nil
	}
	guid, err := w.builtInRole(ctx, cli, name)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("/subscriptions/%s/providers/Microsoft.Authorization/roleDefinitions/%s", subscriptionOf(r.ARMID), guid)
	old, _ := json.Marshal(name)
	repl, _ := json.Marshal(id)
	return bytes.Replace(body, append([]byte(`"roleDefinitionId":`), old...), append([]byte(`"roleDefinitionId":`), repl...), 1), nil
}

func (w *walk) builtInRole(ctx context.Context, cli ARM, name string) (string, error) {
	items, err := cli.List(ctx, "/providers/Microsoft.Authorization/roleDefinitions", roleDefinitionsAPIVersion)
	if err != nil {
		return "", fmt.Errorf("list role definitions to resolve wellKnownName %q: %w", name, err)
	}
	for _, it := range items {
		var rd struct {
			Name       string `json:"name"`
			Properties struct {
				RoleName string `json:"roleName"`
				Type     string `json:"type"`
			} `json:"properties"`
		}
		if json.Unmarshal(it, &rd) != nil {
			continue
		}
		if strings.EqualFold(rd.Properties.RoleName, name) && (rd.Properties.Type == "" || strings.EqualFold(rd.Properties.Type, "BuiltInRole")) {
			return rd.Name, nil
		}
	}
	return "", &statusError{reason: "ReferenceNotFound", severity: "Error", msg: fmt.Sprintf("no built-in role named %q (roleDefinitionReference.wellKnownName)", name)}
}
