package emulator_test

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/emulator"
)

func getJSON(t *testing.T, c *http.Client, u string, out any) int {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("GET %s: %v: %s", u, err, b)
		}
	}
	return resp.StatusCode
}

func TestMetadataEndpoints(t *testing.T) {
	e := newEmulator(t)
	c := e.HTTPClient()
	var old struct {
		Authentication struct {
			LoginEndpoint string   `json:"loginEndpoint"`
			Audiences     []string `json:"audiences"`
		} `json:"authentication"`
		GraphEndpoint string `json:"graphEndpoint"`
	}
	// msrestazure appends "/metadata/endpoints" to an endpoint that ends in "/".
	if code := getJSON(t, c, e.ARMEndpoint()+"//metadata/endpoints?api-version=2015-01-01", &old); code != http.StatusOK {
		t.Fatalf("2015-01-01: status %d", code)
	}
	if old.Authentication.LoginEndpoint != e.ARMEndpoint()+"/adfs" || len(old.Authentication.Audiences) == 0 ||
		old.Authentication.Audiences[0] != "https://management.core.windows.net/" || old.GraphEndpoint == "" {
		t.Errorf("2015-01-01 answer = %+v", old)
	}
	var list []map[string]any
	if code := getJSON(t, c, e.ARMEndpoint()+"/metadata/endpoints?api-version=2019-05-01", &list); code != http.StatusOK || len(list) != 1 {
		t.Fatalf("2019-05-01: status %d, %d clouds", code, len(list))
	}
	if list[0]["resourceManager"] != e.ARMEndpoint()+"/" || list[0]["name"] == "" {
		t.Errorf("2019-05-01 cloud = %v", list[0])
	}
	var one map[string]any
	if code := getJSON(t, c, e.ARMEndpoint()+"/metadata/endpoints?api-version=2022-09-01", &one); code != http.StatusOK {
		t.Fatalf("2022-09-01: status %d", code)
	}
	if one["resourceManager"] != e.ARMEndpoint()+"/" || one["microsoftGraphResourceId"] != "https://graph.microsoft.com/" {
		t.Errorf("2022-09-01 cloud = %v", one)
	}
	if code := getJSON(t, c, e.ARMEndpoint()+"/metadata/endpoints", nil); code != http.StatusBadRequest {
		t.Errorf("without api-version: status %d, want 400", code)
	}
}

// MSAL asks /common/discovery/instance about an authority whose tenant is in authorization_endpoint; the tenant
// discovery endpoint it gets back must be that tenant's, or its token request goes to /common and fails.
func TestInstanceDiscoveryNamesTheTenantAsked(t *testing.T) {
	e := newEmulator(t)
	c := e.HTTPClient()
	q := url.Values{"api-version": {"1.0"}, "authorization_endpoint": {"https://127.0.0.1/" + e.TenantID() + "/oauth2/v2.0/authorize"}}
	var d struct {
		TenantDiscoveryEndpoint string `json:"tenant_discovery_endpoint"`
	}
	if code := getJSON(t, c, e.ARMEndpoint()+"/common/discovery/instance?"+q.Encode(), &d); code != http.StatusOK {
		t.Fatalf("status %d", code)
	}
	want := e.ARMEndpoint() + "/" + e.TenantID() + "/v2.0/.well-known/openid-configuration"
	if d.TenantDiscoveryEndpoint != want {
		t.Fatalf("tenant_discovery_endpoint = %q, want %q", d.TenantDiscoveryEndpoint, want)
	}
	var oidc struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if code := getJSON(t, c, d.TenantDiscoveryEndpoint, &oidc); code != http.StatusOK || !strings.Contains(oidc.TokenEndpoint, "/"+e.TenantID()+"/") {
		t.Fatalf("openid configuration: status %d, token endpoint %q", code, oidc.TokenEndpoint)
	}
}

// The login proxy tunnels login.microsoftonline.com to the emulator (whose certificate names it) and refuses
// anything else.
func TestLoginProxy(t *testing.T) {
	e := newEmulator(t)
	proxy, err := e.StartLoginProxy()
	if err != nil {
		t.Fatal(err)
	}
	pu, _ := url.Parse(proxy)
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: e.CertPool()}}}
	t.Cleanup(c.CloseIdleConnections)
	q := url.Values{"api-version": {"1.0"}, "authorization_endpoint": {"https://127.0.0.1/" + e.TenantID() + "/oauth2/v2.0/authorize"}}
	var d map[string]any
	if code := getJSON(t, c, "https://login.microsoftonline.com/common/discovery/instance?"+q.Encode(), &d); code != http.StatusOK || d["tenant_discovery_endpoint"] == nil {
		t.Fatalf("through the proxy: status %d, %v", code, d)
	}
	if code := getJSON(t, c, e.ARMEndpoint()+"/metadata/endpoints?api-version=2015-01-01", nil); code != http.StatusOK {
		t.Fatalf("emulator through the proxy: status %d", code)
	}
	conn, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = conn.Write([]byte("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("CONNECT example.com: status %d, want 403", resp.StatusCode)
	}
	again, _ := e.StartLoginProxy()
	if again != proxy {
		t.Errorf("second StartLoginProxy = %s, want %s", again, proxy)
	}
}

func TestAzureCLICloudConfig(t *testing.T) {
	var cfg struct {
		Endpoints map[string]string `json:"endpoints"`
		Suffixes  map[string]string `json:"suffixes"`
	}
	if err := json.Unmarshal([]byte(emulator.AzureCLICloudConfig("https://127.0.0.1:8443")), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoints["resourceManager"] != "https://127.0.0.1:8443/" || cfg.Endpoints["microsoftGraphResourceId"] == "" || cfg.Suffixes["keyvaultDns"] != ".vault.azure.net" {
		t.Errorf("cloud config = %+v", cfg)
	}
}

// The login endpoint the metadata names is an ADFS authority, as a
// disconnected Azure Stack Hub's: its discovery document leads to a token
// endpoint that issues the emulator's ARM tokens to a service principal.
func TestADFSAuthority(t *testing.T) {
	e := newEmulator(t)
	c := e.HTTPClient()
	var cfg struct {
		TokenEndpoint string `json:"token_endpoint"`
	}
	if code := getJSON(t, c, e.ARMEndpoint()+"/adfs/.well-known/openid-configuration", &cfg); code != http.StatusOK || cfg.TokenEndpoint != e.ARMEndpoint()+"/adfs/oauth2/token" {
		t.Fatalf("discovery: status %d, %+v", code, cfg)
	}
	boot, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "adfs-user"},
		Roles: []emulator.RoleGrant{{Role: "Reader"}}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.PostForm(cfg.TokenEndpoint, url.Values{"grant_type": {"client_credentials"}, "client_id": {boot.ClientID},
		"client_secret": {boot.Secret}, "scope": {"https://management.core.windows.net//.default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != http.StatusOK || tok.AccessToken == "" {
		t.Fatalf("token: status %d, %v", resp.StatusCode, err)
	}
	req, _ := http.NewRequest(http.MethodGet, e.ARMEndpoint()+"/subscriptions?api-version=2022-12-01", nil)
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	sr, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sr.Body.Close()
	if sr.StatusCode != http.StatusOK {
		t.Errorf("ARM with the ADFS token: status %d", sr.StatusCode)
	}
}
