package reliability

import (
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/record"
)

// Kinds the fleet declares, as "apiVersion Kind".
const (
	kindResourceGroup = "resources.azure.com/v1api20200601 ResourceGroup"
	kindIdentity      = "managedidentity.azure.com/v1api20230131 UserAssignedIdentity"
	kindRoleAssign    = "authorization.azure.com/v1api20220401 RoleAssignment"
	kindSBNamespace   = "servicebus.azure.com/v1api20240101 Namespace"
	kindSBQueue       = "servicebus.azure.com/v1api20240101 NamespacesQueue"
)

// RepoPath is the directory inside the harness repositories that gitaso reads (--path).
const RepoPath = "infra"

// Fleet describes the manifests of one trial: two resource groups, two user-assigned identities, three role
// assignments fed by the identities' exported principalIds (on a resource group each and on the Service Bus
// namespace), a Service Bus namespace and its queues. Its methods return the variants the scenarios commit.
type Fleet struct {
	// Prefix starts every ARM name of the fleet (unique per trial, e.g. "rel-t07"); the inventory looks at the
	// resource groups whose names start with it.
	Prefix string
	// Namespace is the Kubernetes namespace of the manifests.
	Namespace string
	// Subscription is the emulator's subscription ID.
	Subscription string
	// Queues is how many queues the Service Bus namespace holds (at least 2).
	Queues int
	// Rev is written into the tags of every resource that takes tags; an update changes it.
	Rev string
	// MaxDelivery is every queue's maxDeliveryCount; an update changes it.
	MaxDelivery int
	// Dropped removes the auxiliary resource group (with its identity and role assignment) and the last queue.
	Dropped bool
	// Moved puts every manifest in Namespace+"-mv" under another directory, renamed with a "-mv" suffix, with
	// spec.azureName keeping each ARM name.
	Moved bool
}

// NewFleet returns the fleet whose ARM names start with prefix, in its first revision.
func NewFleet(prefix, subscription string) Fleet {
	return Fleet{Prefix: prefix, Namespace: strings.TrimPrefix(prefix, "rel-") + "-team", Subscription: subscription,
		Queues: 3, Rev: "r1", MaxDelivery: 10}
}

// Updated is the fleet with changed tags and queue settings.
func (f Fleet) Updated() Fleet { f.Rev, f.MaxDelivery = f.Rev+"u", f.MaxDelivery-3; return f }

// Dropping is the fleet without the auxiliary resource group's resources and the last queue (4 of 11 deletions,
// under the deletion guard's default thresholds).
func (f Fleet) Dropping() Fleet { f.Dropped = true; return f }

// MovedAway is the same fleet under another namespace and other manifest names, keeping every ARM name.
func (f Fleet) MovedAway() Fleet { f.Moved = true; return f }

// Decl is one resource a fleet declares.
type Decl struct {
	Namespace, Group, Version, Kind, Name string
	// AzureName is the ARM name; AltNames are the other names the manifest had or has (metadata.name before and
	// after a move), which a wrong implementation could have used as ARM names (duplicate detection).
	AzureName string
	AltNames  []string
	ARMID     string
	ARMType   string
	// APIVersion is the ARM api-version to read it with.
	APIVersion string
	File       string
	// Expect are fields the resource must hold in Azure, as dotted paths into ARM's JSON
	// ("tags.rev", "properties.maxDeliveryCount").
	Expect map[string]string
}

// Key is the resource's state key.
func (d Decl) Key() string { return record.ResourceKey(d.Namespace, d.Group, d.Kind, d.Name) }

// manifest is a fleet member before rendering.
type manifest struct {
	kind      string
	key       string // stable identity across variants, e.g. "main"
	file      string
	owner     map[string]any // spec.owner (by name, to the manifest's current name)
	ownerKey  string         // key of the owning manifest ("" for resource groups)
	spec      map[string]any // everything but owner and azureName
	expect    map[string]string
	azureName string // ARM name before any move
}

func (f Fleet) name(key string) string {
	if f.Moved {
		return f.Prefix + "-" + key + "-mv"
	}
	return f.Prefix + "-" + key
}

func (f Fleet) namespace() string {
	if f.Moved {
		return f.Namespace + "-mv"
	}
	return f.Namespace
}

// members lists the fleet's manifests in dependency order.
func (f Fleet) members() []manifest {
	tags := func(role string) map[string]any {
		return map[string]any{"rev": f.Rev, "harness": "gitaso-reliability", "role": role}
	}
	expectTags := func(role string) map[string]string {
		return map[string]string{"tags.rev": f.Rev, "tags.role": role}
	}
	byName := func(group, kind, key string) map[string]any {
		m := map[string]any{"name": f.name(key)}
		if group != "" {
			m["group"], m["kind"] = group, kind
		}
		return m
	}
	settings := func(id string) map[string]any {
		return map[string]any{"configMaps": map[string]any{"principalId": map[string]any{"name": f.Prefix + "-" + id + "-settings", "key": "principalId"}}}
	}
	ra := func(key, ownerGroup, ownerKind, ownerKey, id, role string) manifest {
		return manifest{kind: kindRoleAssign, key: key, file: "roles.yaml", ownerKey: ownerKey,
			owner: byName(ownerGroup, ownerKind, ownerKey),
			spec: map[string]any{
				"principalIdFromConfig":   map[string]any{"name": f.Prefix + "-" + id + "-settings", "key": "principalId"},
				"principalType":           "ServicePrincipal",
				"roleDefinitionReference": map[string]any{"wellKnownName": role},
			}}
	}
	out := []manifest{
		{kind: kindResourceGroup, key: "main", file: "groups.yaml", spec: map[string]any{"location": "westeurope", "tags": tags("main")}, expect: expectTags("main")},
		{kind: kindIdentity, key: "id1", file: "identities.yaml", ownerKey: "main", owner: byName("", "", "main"),
			spec: map[string]any{"location": "westeurope", "tags": tags("id1"), "operatorSpec": settings("id1")}, expect: expectTags("id1")},
		ra("ra-main", "resources.azure.com", "ResourceGroup", "main", "id1", "Contributor"),
		{kind: kindSBNamespace, key: "bus", file: "servicebus.yaml", ownerKey: "main", owner: byName("", "", "main"),
			spec: map[string]any{"location": "westeurope", "sku": map[string]any{"name": "Standard"}, "tags": tags("bus")}, expect: expectTags("bus")},
		ra("ra-bus", "servicebus.azure.com", "Namespace", "bus", "id1", "Azure Service Bus Data Owner"),
	}
	for q := 1; q <= f.Queues; q++ {
		if f.Dropped && q == f.Queues {
			break
		}
		key := fmt.Sprintf("q%d", q)
		out = append(out, manifest{kind: kindSBQueue, key: key, file: "servicebus.yaml", ownerKey: "bus", owner: byName("", "", "bus"),
			spec:   map[string]any{"lockDuration": "PT1M", "maxDeliveryCount": int64(f.MaxDelivery)},
			expect: map[string]string{"properties.maxDeliveryCount": fmt.Sprint(f.MaxDelivery)}})
	}
	if !f.Dropped {
		out = append(out,
			manifest{kind: kindResourceGroup, key: "aux", file: "groups.yaml", spec: map[string]any{"location": "westeurope", "tags": tags("aux")}, expect: expectTags("aux")},
			manifest{kind: kindIdentity, key: "id2", file: "identities.yaml", ownerKey: "aux", owner: byName("", "", "aux"),
				spec: map[string]any{"location": "westeurope", "tags": tags("id2"), "operatorSpec": settings("id2")}, expect: expectTags("id2")},
			ra("ra-aux", "resources.azure.com", "ResourceGroup", "aux", "id2", "Reader"),
		)
	}
	// ARM names: what the manifest had before any move.
	orig := f
	orig.Moved = false
	for i := range out {
		m := &out[i]
		spec := cloneMap(m.spec)
		if m.owner != nil {
			o := cloneMap(m.owner)
			o["name"] = orig.name(m.ownerKey)
			spec["owner"] = o
		}
		k := mustKind(m.kind)
		name, err := aso.AzureName(k, orig.namespace(), orig.name(m.key), spec)
		if err != nil {
			panic(fmt.Sprintf("reliability: azureName of %s: %v", m.key, err))
		}
		m.azureName = name
	}
	return out
}

// Files renders the fleet's manifests: repository path → content (under RepoPath).
func (f Fleet) Files() map[string]string {
	dir := RepoPath + "/" + f.Namespace
	if f.Moved {
		dir = RepoPath + "/moved/" + f.namespace()
	}
	files := map[string]*strings.Builder{}
	for _, m := range f.members() {
		path := dir + "/" + m.file
		b := files[path]
		if b == nil {
			b = &strings.Builder{}
			fmt.Fprintf(b, "# gitaso reliability harness, fleet %s (rev %s)\n", f.Prefix, f.Rev)
			files[path] = b
		} else {
			b.WriteString("---\n")
		}
		apiVersion, kind, _ := strings.Cut(m.kind, " ")
		fmt.Fprintf(b, "apiVersion: %s\nkind: %s\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n", apiVersion, kind, f.name(m.key), f.namespace())
		spec := cloneMap(m.spec)
		if m.owner != nil {
			spec["owner"] = m.owner
		}
		if f.Moved {
			spec["azureName"] = m.azureName
		}
		writeYAML(b, spec, 2)
	}
	out := make(map[string]string, len(files))
	for p, b := range files {
		out[p] = b.String()
	}
	return out
}

// Decls returns the resources the fleet declares, with their ARM IDs, sorted by ARM ID.
func (f Fleet) Decls() []Decl {
	members := f.members()
	ids := map[string]string{}
	var out []Decl
	for _, m := range members {
		k := mustKind(m.kind)
		id, err := aso.ARMID(k, f.Subscription, ids[m.ownerKey], m.azureName)
		if err != nil {
			panic(fmt.Sprintf("reliability: ARM ID of %s: %v", m.key, err))
		}
		ids[m.key] = id
		alt := []string{f.Prefix + "-" + m.key, f.Prefix + "-" + m.key + "-mv"}
		out = append(out, Decl{Namespace: f.namespace(), Group: k.Group, Version: k.Version, Kind: k.Kind, Name: f.name(m.key),
			AzureName: m.azureName, AltNames: alt, ARMID: id, ARMType: k.ARMType, APIVersion: k.APIVersion,
			File: m.file, Expect: m.expect})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ARMID < out[j].ARMID })
	return out
}

func mustKind(apiVersionKind string) *aso.Kind {
	apiVersion, kind, _ := strings.Cut(apiVersionKind, " ")
	k, ok := aso.LookupAPIVersion(apiVersion, kind)
	if !ok {
		panic("reliability: kind not in the catalog: " + apiVersionKind)
	}
	return k
}

func cloneMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// writeYAML writes a JSON-like value as block YAML (keys sorted; strings quoted).
func writeYAML(b *strings.Builder, v map[string]any, indent int) {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	pad := strings.Repeat(" ", indent)
	for _, k := range keys {
		switch x := v[k].(type) {
		case map[string]any:
			fmt.Fprintf(b, "%s%s:\n", pad, k)
			writeYAML(b, x, indent+2)
		case string:
			fmt.Fprintf(b, "%s%s: %q\n", pad, k, x)
		default:
			fmt.Fprintf(b, "%s%s: %v\n", pad, k, x)
		}
	}
}
