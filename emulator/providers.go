package emulator

import (
	"net/http"
	"slices"
	"strings"
)

// Resource providers as GET {scope}/providers and {scope}/providers/{namespace} describe them: every provider is
// Registered, and its resourceTypes name the api-versions Azure answered for each type in ASO's recorded traffic
// (armTable, generated from the conformance data), newest first, with the regions of locations.go. Generic clients
// need them: `az resource show|update|delete --ids` picks the newest non-preview api-version of the type from here.
// Microsoft.Resources and Microsoft.Authorization, which that traffic barely shows, have their types listed here.

var builtinProviderTypes = map[string]map[string][]string{
	"Microsoft.Resources": {
		"resourceGroups": {"2022-09-01", "2021-04-01", "2020-06-01", "2019-10-01"},
		"subscriptions":  {"2022-12-01", "2021-01-01", "2020-01-01"},
		"tags":           {"2022-09-01", "2021-04-01", "2019-10-01"},
		"deployments":    {"2022-09-01", "2021-04-01", "2020-06-01"},
		"locations":      {"2022-12-01", "2021-01-01"},
	},
	"Microsoft.Authorization": {
		"roleAssignments": {"2022-04-01", "2020-04-01-preview", "2015-07-01"},
		"roleDefinitions": {"2022-04-01", "2018-01-01-preview", "2015-07-01"},
		"locks":           {"2020-05-01", "2016-09-01"},
	},
}

// providerTypes returns the namespace's resource types (as Azure spells them) and their api-versions, newest first.
func providerTypes(namespace string) (string, map[string][]string) {
	out := map[string][]string{}
	canonical := ""
	for ns, types := range builtinProviderTypes {
		if strings.EqualFold(ns, namespace) {
			canonical = ns
			for t, v := range types {
				out[t] = v
			}
		}
	}
	for _, t := range armTable {
		ns, rest, ok := strings.Cut(t.Type, "/")
		if !ok || !strings.EqualFold(ns, namespace) || len(t.APIVersions) == 0 {
			continue
		}
		if canonical == "" || ns[0] >= 'A' && ns[0] <= 'Z' && canonical[0] >= 'a' {
			canonical = ns
		}
		versions := append(out[rest], t.APIVersions...)
		slices.Sort(versions)
		slices.Reverse(versions)
		out[rest] = slices.Compact(versions)
	}
	if canonical == "" {
		canonical = namespace
	}
	return canonical, out
}

func providerNamespaces() []string {
	seen := map[string]string{}
	for ns := range builtinProviderTypes {
		seen[strings.ToLower(ns)] = ns
	}
	for _, t := range armTable {
		if ns, _, ok := strings.Cut(t.Type, "/"); ok {
			if _, dup := seen[strings.ToLower(ns)]; !dup {
				seen[strings.ToLower(ns)] = ns
			}
		}
	}
	out := make([]string, 0, len(seen))
	for _, ns := range seen {
		out = append(out, ns)
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	return out
}

func (e *Emulator) providerJSON(scope, namespace string) map[string]any {
	ns, types := providerTypes(namespace)
	locs := make([]string, len(regions))
	for i, r := range regions {
		locs[i] = r.DisplayName
	}
	rts := []any{}
	names := make([]string, 0, len(types))
	for t := range types {
		names = append(names, t)
	}
	slices.SortFunc(names, func(a, b string) int { return strings.Compare(strings.ToLower(a), strings.ToLower(b)) })
	for _, t := range names {
		rt := map[string]any{"resourceType": t, "locations": locs, "apiVersions": types[t]}
		for _, v := range types[t] {
			if !strings.Contains(v, "-preview") {
				rt["defaultApiVersion"] = v
				break
			}
		}
		rts = append(rts, rt)
	}
	return map[string]any{"id": scope + "/providers/" + ns, "namespace": ns, "registrationState": "Registered",
		"registrationPolicy": "RegistrationRequired", "resourceTypes": rts}
}

// serveProviders answers GET {scope}/providers and {scope}/providers/{namespace}.
func (e *Emulator) serveProviders(w http.ResponseWriter, r *http.Request, p armPath) {
	if p.Kind == pathProviderList {
		values := []any{}
		for _, ns := range providerNamespaces() {
			values = append(values, e.providerJSON(p.Parent, ns))
		}
		writeJSON(w, http.StatusOK, map[string]any{"value": values})
		return
	}
	writeJSON(w, http.StatusOK, e.providerJSON(p.Parent, p.Namespace))
}
