package aso

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// exportsARM answers POSTs and GETs from a table of path → body and records
// every call as "METHOD path?api-version".
type exportsARM struct {
	bodies map[string]string
	calls  []string
}

var errExportsNotFound = errors.New("404 not found")

func (f *exportsARM) answer(method, path, apiVersion string) ([]byte, error) {
	f.calls = append(f.calls, method+" "+path+"?"+apiVersion)
	if b, ok := f.bodies[path]; ok {
		return []byte(b), nil
	}
	return nil, errExportsNotFound
}

func (f *exportsARM) Get(_ context.Context, id, apiVersion string) ([]byte, error) {
	return f.answer("GET", id, apiVersion)
}

func (f *exportsARM) Put(context.Context, string, string, []byte) ([]byte, error) {
	return nil, errors.New("unexpected PUT")
}

func (f *exportsARM) Delete(context.Context, string, string) error {
	return errors.New("unexpected DELETE")
}

func (f *exportsARM) DeleteWith(context.Context, string, string, url.Values, http.Header) error {
	return errors.New("unexpected DELETE")
}

func (f *exportsARM) Post(_ context.Context, path, apiVersion string, _ []byte) ([]byte, error) {
	return f.answer("POST", path, apiVersion)
}

func (f *exportsARM) List(context.Context, string, string) ([]json.RawMessage, error) {
	return nil, errors.New("unexpected list")
}

func secretExport(name string) Export {
	return Export{Secret: true, Source: name, Name: "s", Key: name}
}

func exprExport(secret bool, key, text string) Export {
	return Export{Secret: secret, Source: text, Expr: true, Name: "e", Key: key}
}

func valuesByKey(vals []ExportValue) map[string]string {
	out := map[string]string{}
	for _, v := range vals {
		out[v.Name+"/"+v.Key] = v.Value
	}
	return out
}

const searchID = "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Search/searchServices/find"

// TestSearchServiceSecrets: both calls once, whichever secret is asked for;
// the written secrets are the keys, and secretExpressions see ASO's
// RawSecrets (adminSecondaryKey holds the primary key, queryKey only when
// empty).
func TestSearchServiceSecrets(t *testing.T) {
	arm := &exportsARM{bodies: map[string]string{
		searchID + "/listQueryKeys": `{"value":[{"name":"other","key":"Q2"},{"name":null,"key":"Q1"}],"nextLink":null}`,
		searchID + "/listAdminKeys": `{"primaryKey":"A1","secondaryKey":"A2"}`,
	}}
	a := Applied{Group: "search.azure.com", Version: "v1api20231101", Kind: "SearchService", ARMID: searchID,
		Manifest: map[string]any{"spec": map[string]any{}}, Response: []byte(`{"identity":{"principalId":"p"}}`)}
	vals, err := Exports(context.Background(), arm, a, []Export{
		secretExport("adminPrimaryKey"), secretExport("adminSecondaryKey"), secretExport("queryKey"),
		{Source: "identityPrincipalId", Name: "c", Key: "pid"},
		exprExport(true, "raw2", `secret.adminSecondaryKey`),
		exprExport(true, "rawq", `secret.?queryKey.orValue("absent")`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s/adminPrimaryKey": "A1", "s/adminSecondaryKey": "A2", "s/queryKey": "Q1", "c/pid": "p",
		"e/raw2": "A1", "e/rawq": "absent"}
	if d := cmp.Diff(want, valuesByKey(vals)); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	wantCalls := []string{"POST " + searchID + "/listQueryKeys?2025-05-01", "POST " + searchID + "/listAdminKeys?2025-05-01"}
	if d := cmp.Diff(wantCalls, arm.calls); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
}

// TestExportsCallOnlyWhatIsAsked: no ARM call for exports read from the
// resource; AKS lists only the credential asked for; a failed call is named
// with the ARM error wrapped.
func TestExportsCallOnlyWhatIsAsked(t *testing.T) {
	mc := "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ContainerService/managedClusters/aks"
	arm := &exportsARM{bodies: map[string]string{
		mc + "/listClusterUserCredential": `{"kubeconfigs":[{"name":"clusterUser","value":"YXBpVmVyc2lvbjogdjEK"}]}`,
	}}
	a := Applied{Group: "containerservice.azure.com", Version: "v1api20250801", Kind: "ManagedCluster", ARMID: mc,
		Response: []byte(`{"identity":{"principalId":"p"},"properties":{"oidcIssuerProfile":{"issuerURL":"https://oidc"}}}`)}
	vals, err := Exports(context.Background(), arm, a, []Export{
		{Source: "oidcIssuerProfile", Name: "c", Key: "oidc"}, secretExport("userCredentials"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]string{"c/oidc": "https://oidc", "s/userCredentials": "apiVersion: v1\n"}, valuesByKey(vals)); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"POST " + mc + "/listClusterUserCredential?2022-04-01"}, arm.calls); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	_, err = Exports(context.Background(), arm, a, []Export{secretExport("adminCredentials")})
	var xe *ExportError
	if !errors.As(err, &xe) || len(xe.Problems) != 1 || !errors.Is(err, errExportsNotFound) ||
		!strings.Contains(err.Error(), "secret s/adminCredentials (adminCredentials): listClusterAdminCredential: 404") {
		t.Errorf("failed call: %v", err)
	}
}

// TestPrivateEndpointAddress follows ASO's rule: the first IP
// configuration's address once any configuration is primary.
func TestPrivateEndpointAddress(t *testing.T) {
	nic := "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/networkInterfaces/pe.nic.1"
	for _, tc := range []struct{ name, nic, want, err string }{
		{"primary", `{"properties":{"ipConfigurations":[{"properties":{"primary":true,"privateIPAddress":"10.0.0.4"}}]}}`, "10.0.0.4", ""},
		{"first of several", `{"properties":{"ipConfigurations":[{"properties":{"primary":false,"privateIPAddress":"10.0.0.9"}},{"properties":{"primary":true,"privateIPAddress":"10.0.0.4"}}]}}`, "10.0.0.9", ""},
		{"none primary", `{"properties":{"ipConfigurations":[{"properties":{"privateIPAddress":"10.0.0.4"}}]}}`, "", "has no primaryNicPrivateIpAddress"},
	} {
		arm := &exportsARM{bodies: map[string]string{nic: tc.nic}}
		// ARM's ID casing differs from the SDK's path.
		a := Applied{Group: "network.azure.com", Version: "v1api20240301", Kind: "PrivateEndpoint",
			ARMID:    "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Network/privateEndpoints/pe",
			Response: []byte(`{"properties":{"networkInterfaces":[{"id":"/subscriptions/sub/resourcegroups/rg/providers/microsoft.network/networkinterfaces/pe.nic.1"}]}}`)}
		vals, err := Exports(context.Background(), arm, a, []Export{{Source: "primaryNicPrivateIpAddress", Name: "c", Key: "ip"}})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		if err != nil || valuesByKey(vals)["c/ip"] != tc.want {
			t.Errorf("%s: %v %v", tc.name, vals, err)
		}
		if d := cmp.Diff([]string{"GET " + nic + "?2022-01-01"}, arm.calls); d != "" {
			t.Errorf("%s calls (-want +got):\n%s", tc.name, d)
		}
	}
}

// TestExportTableCoversCatalog: every operatorSpec.configMaps and
// operatorSpec.secrets name of every kind version in the catalog is in the
// table (read from the resource or from a call), or marked as one ASO never
// writes; kinds without an entry have none.
func TestExportTableCoversCatalog(t *testing.T) {
	for _, k := range mustCatalog().kinds {
		if !k.Generated {
			continue
		}
		td, err := k.spec()
		if err != nil {
			t.Fatal(err)
		}
		op := td.byName["operatorSpec"]
		if op == nil || op.ref == nil {
			continue
		}
		configs, secrets, ok := exportsFor(k.Group, k.Kind)
		for _, w := range []string{"configMaps", "secrets"} {
			f := op.ref.byName[w]
			if f == nil || f.ref == nil {
				continue
			}
			for _, ex := range f.ref.fields {
				have := configs
				if w == "secrets" {
					have = secrets
				}
				if !ok {
					t.Errorf("%s %s: %s.%s but no table entry", k.Group, k, w, ex.name)
					continue
				}
				if !hasName(have, ex.name) && !hasName(exportsByKind[k.Group+"/"+k.Kind].missing, ex.name) {
					t.Errorf("%s %s: %s.%s not in the table", k.Group, k, w, ex.name)
				}
			}
		}
	}
}

// TestValidateCompilesExpressions: aso.Validate compiles every expression
// against the kind's typed self, pure, before anything is applied.
func TestValidateCompilesExpressions(t *testing.T) {
	k, _ := LookupAPIVersion("managedidentity.azure.com/v1api20230131", "UserAssignedIdentity")
	obj := map[string]any{"spec": map[string]any{"location": "westeurope", "owner": map[string]any{"name": "rg"},
		"operatorSpec": map[string]any{
			"configMapExpressions": []any{
				map[string]any{"name": "a", "key": "k", "value": `self.spec.locaton`},
				map[string]any{"name": "a", "key": "l", "value": `self.spec.location + self.status.anything`},
			},
			"secretExpressions": []any{map[string]any{"name": "b", "key": "k", "value": `1 +`}},
		}}}
	var got []string
	for _, e := range Validate(k, obj) {
		got = append(got, e.Field)
		if !strings.Contains(e.Msg, "compile CEL expression") && !strings.Contains(e.Msg, "undefined field") {
			t.Errorf("%s: %s", e.Field, e.Msg)
		}
	}
	want := []string{"spec.operatorSpec.configMapExpressions[0].value", "spec.operatorSpec.secretExpressions[0].value"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("fields (-want +got):\n%s", d)
	}
}

// TestRawSecrets: secretExpressions see ASO's RawSecrets: the calls' values,
// and of the secrets read from the resource only those ASO hands over
// (servicebus Namespace endpoint; not Redis hostName).
func TestRawSecrets(t *testing.T) {
	redis := "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.Cache/Redis/r"
	arm := &exportsARM{bodies: map[string]string{redis + "/listKeys": `{"primaryKey":"P","secondaryKey":""}`}}
	a := Applied{Group: "cache.azure.com", Version: "v1api20230801", Kind: "Redis", ARMID: redis,
		Response: []byte(`{"properties":{"hostName":"r.redis.cache.windows.net"}}`)}
	vals, err := Exports(context.Background(), arm, a, []Export{
		secretExport("hostName"),
		exprExport(true, "k", `secret.primaryKey`),
		exprExport(true, "h", `secret.?hostName.orValue("not handed over")`),
		exprExport(true, "s", `secret.?secondaryKey.orValue("empty")`),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s/hostName": "r.redis.cache.windows.net", "e/k": "P", "e/h": "not handed over", "e/s": "empty"}
	if d := cmp.Diff(want, valuesByKey(vals)); d != "" {
		t.Errorf("values (-want +got):\n%s", d)
	}

	ns := "/subscriptions/sub/resourceGroups/rg/providers/Microsoft.ServiceBus/namespaces/n"
	a = Applied{Group: "servicebus.azure.com", Version: "v1api20240101", Kind: "Namespace", ARMID: ns,
		Response: []byte(`{"properties":{"serviceBusEndpoint":"https://n.servicebus.windows.net:443/"}}`)}
	vals, err = Exports(context.Background(), &exportsARM{}, a, []Export{exprExport(true, "ep", `secret.endpoint`)})
	if err != nil || valuesByKey(vals)["e/ep"] != "https://n.servicebus.windows.net:443/" {
		t.Errorf("servicebus endpoint: %v %v", vals, err)
	}
}

// exportsFor returns the export names gitaso can fill for a kind: config map
// names and secret names. ok is false for kinds without a table entry, whose
// config maps are looked up by name in ARM's response.
func exportsFor(group, kind string) (configs, secrets []string, ok bool) {
	ke := exportsByKind[group+"/"+kind]
	if ke == nil {
		return nil, nil, false
	}
	for k := range ke.configs {
		configs = append(configs, k)
	}
	for k := range ke.secrets {
		secrets = append(secrets, k)
	}
	for _, c := range ke.calls {
		if c.secret {
			secrets = append(secrets, c.names...)
		} else {
			configs = append(configs, c.names...)
		}
	}
	sort.Strings(configs)
	sort.Strings(secrets)
	return configs, secrets, true
}
