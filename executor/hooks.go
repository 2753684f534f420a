package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"weak"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// roleDefinitionsAPIVersion is the api-version ASO lists role definitions with.
const roleDefinitionsAPIVersion = "2022-04-01"

// hooks applies the payload modifiers ASO runs after conversion (the kinds'
// armPayloadModifier extensions). docs/hooks.md lists every hook of the
// catalog and what gitaso does for it.
func (w *walk) hooks(ctx context.Context, cli ARM, r *planner.Resource, body []byte) ([]byte, error) {
	switch r.Group + "/" + r.Kind {
	case "authorization.azure.com/RoleAssignment":
		return w.resolveWellKnownRole(ctx, cli, r, body)
	case "keyvault.azure.com/Vault":
		return w.vaultCreateMode(ctx, cli, r, body)
	}
	if c, ok := preservedCollections[r.Group+"/"+r.Kind]; ok {
		return w.preserveChildren(ctx, cli, r, body, c)
	}
	return body, nil
}

// planCache holds what the hooks look up once per plan (the role definition
// list). It lives as long as the plan: it is keyed by a weak pointer and
// dropped when the plan is collected.
type planCache struct {
	mu    sync.Mutex
	roles map[string]*roleList // credential → built-in roles
}

type roleList struct {
	mu    sync.Mutex
	names map[string]string // lower-cased roleName → GUID; nil until read
}

var planCaches sync.Map // weak.Pointer[planner.Plan] → *planCache

func cacheFor(p *planner.Plan) *planCache {
	k := weak.Make(p)
	if c, ok := planCaches.Load(k); ok {
		return c.(*planCache)
	}
	c, loaded := planCaches.LoadOrStore(k, &planCache{roles: map[string]*roleList{}})
	if !loaded {
		runtime.AddCleanup(p, func(k weak.Pointer[planner.Plan]) { planCaches.Delete(k) }, k)
	}
	return c.(*planCache)
}

// resolveWellKnownRole replaces a roleDefinitionId that holds a built-in
// role's name (roleDefinitionReference.wellKnownName) with the role's ID, as
// ASO does: list role definitions, keep BuiltInRole ones, match roleName
// case-insensitively, and build the ID in the assignment's subscription. The
// list is read once per plan and credential.
func (w *walk) resolveWellKnownRole(ctx context.Context, cli ARM, r *planner.Resource, body []byte) ([]byte, error) {
	raw, ok := rawAt(body, "properties", "roleDefinitionId")
	if !ok {
		return body, nil
	}
	var name string
	if json.Unmarshal(raw, &name) != nil || name == "" || strings.HasPrefix(name, "/") {
		return body, nil
	}
	guid, err := w.builtInRole(ctx, cli, r.Credential, name)
	if err != nil {
		return nil, err
	}
	id := fmt.Sprintf("/subscriptions/%s/providers/Microsoft.Authorization/roleDefinitions/%s", subscriptionOf(r.ARMID), guid)
	return setPath(body, []string{"properties", "roleDefinitionId"}, marshalJSON(id))
}

func (w *walk) builtInRole(ctx context.Context, cli ARM, credential, name string) (string, error) {
	c := cacheFor(w.plan)
	c.mu.Lock()
	l := c.roles[credential]
	if l == nil {
		l = &roleList{}
		c.roles[credential] = l
	}
	c.mu.Unlock()
	l.mu.Lock()
	if l.names == nil {
		names, err := listBuiltInRoles(ctx, cli)
		if err != nil {
			l.mu.Unlock()
			return "", fmt.Errorf("list role definitions to resolve wellKnownName %q: %w", name, err)
		}
		l.names = names
	}
	guid, ok := l.names[strings.ToLower(name)]
	l.mu.Unlock()
	if ok {
		return guid, nil
	}
	return "", &statusError{reason: "ReferenceNotFound", severity: record.SeverityError,
		msg: fmt.Sprintf("no built-in role named %q (roleDefinitionReference.wellKnownName)", name)}
}

func listBuiltInRoles(ctx context.Context, cli ARM) (map[string]string, error) {
	items, err := cli.List(ctx, "/providers/Microsoft.Authorization/roleDefinitions", roleDefinitionsAPIVersion)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(items))
	for _, it := range items {
		var rd struct {
			Name       string `json:"name"`
			Properties struct {
				RoleName string `json:"roleName"`
				Type     string `json:"type"`
			} `json:"properties"`
		}
		if json.Unmarshal(it, &rd) != nil || rd.Properties.RoleName == "" {
			continue
		}
		if rd.Properties.Type == "" || strings.EqualFold(rd.Properties.Type, "BuiltInRole") {
			out[strings.ToLower(rd.Properties.RoleName)] = rd.Name
		}
	}
	return out, nil
}
