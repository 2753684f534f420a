package charts_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/source/charts"
)

const acrName = "gitasoacr"

// countingTokens counts the Entra tokens asked for.
type countingTokens struct {
	inner  charts.TokenSource
	n      atomic.Int64
	mu     sync.Mutex
	scopes []string
}

func (c *countingTokens) Token(ctx context.Context, scopes []string) (string, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.scopes = append(c.scopes, scopes...)
	c.mu.Unlock()
	return c.inner.Token(ctx, scopes)
}

// emulatorCredential is an azidentity client-secret credential of a
// principal of the emulator, as gitaso's azure package builds one.
func emulatorCredential(t testing.TB, e *emulator.Emulator, sp emulator.ServicePrincipal) azcore.TokenCredential {
	t.Helper()
	cred, err := azidentity.NewClientSecretCredential(e.TenantID(), sp.ClientID, sp.Secret, &azidentity.ClientSecretCredentialOptions{
		ClientOptions: azcore.ClientOptions{
			Cloud: cloud.Configuration{ActiveDirectoryAuthorityHost: e.AuthorityHost(), Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
				cloud.ResourceManager: {Audience: emulator.ARMAudience, Endpoint: e.ARMEndpoint()},
			}},
			Transport: e.HTTPClient(),
		},
		DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return cred
}

// TestACRProviderAzure pulls charts from the emulator's Azure Container
// Registry with provider azure: an Entra token of gitaso's credential,
// exchanged at /oauth2/exchange, the refresh token as password.
func TestACRProviderAzure(t *testing.T) {
	env := emutest.New(t, emutest.Emulator(emulator.WithRegistry(acrName), emulator.WithoutThrottling()), emutest.Roles("AcrPull"))
	e := env.Emu
	host := e.RegistryHost(acrName)
	archives := map[string][]byte{}
	for _, v := range []string{"1.0.0", "1.1.0", "2.0.0"} {
		archives[v] = buildChart(t, "infra", v)
		if _, err := e.PushHelmChart(bg, acrName, "charts", archives[v]); err != nil {
			t.Fatal(err)
		}
	}
	tokens := &countingTokens{inner: charts.AzureTokenSource(emulatorCredential(t, e, env.Principal))}
	f := newFetcher(t, e.HTTPClient(), func(o *charts.Options) { o.Azure = tokens })
	src := charts.Source{Kind: "HelmRepository", Namespace: "flux-system", Name: "acr", File: "acr.yaml", Line: 1,
		Spec: map[string]any{"type": "oci", "url": "oci://" + host + "/charts", "provider": "azure"}}
	for _, tc := range []struct{ version, want string }{{"1.x", "1.1.0"}, {"", "2.0.0"}, {"1.0.0", "1.0.0"}} {
		c, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: tc.version})
		if err != nil {
			t.Fatalf("%q: %v", tc.version, err)
		}
		if c.Version != tc.want || !bytes.Equal(c.Archive, archives[tc.want]) {
			t.Fatalf("%q: got %s", tc.version, c.Version)
		}
	}
	if n := tokens.n.Load(); n != 1 {
		t.Errorf("%d Entra tokens asked for, want 1 (the refresh token is cached per registry)", n)
	}
	if want := "https://management.azure.com/.default"; len(tokens.scopes) == 0 || tokens.scopes[0] != want {
		t.Errorf("scopes %v, want %s", tokens.scopes, want)
	}

	// An OCIRepository with provider azure (a chartRef).
	oci := charts.Source{Kind: "OCIRepository", Namespace: "flux-system", Name: "infra", Spec: map[string]any{
		"url": "oci://" + host + "/charts/infra", "provider": "azure", "ref": map[string]any{"semver": "~1.0"}}}
	if c, err := f.Fetch(bg, charts.Request{Source: oci}); err != nil || c.Version != "1.0.0" {
		t.Fatalf("OCIRepository: %v", err)
	}

	// A principal without AcrPull is refused by the registry.
	sps, err := e.AddServicePrincipal("stranger")
	if err != nil {
		t.Fatal(err)
	}
	f2 := newFetcher(t, e.HTTPClient(), func(o *charts.Options) {
		o.Azure = charts.AzureTokenSource(emulatorCredential(t, e, sps))
	})
	if _, err := f2.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.x"}); !errors.Is(err, charts.ErrAuth) {
		t.Fatalf("without AcrPull: %v", err)
	}

	// No Azure credential: provider azure is refused, saying why.
	f3 := newFetcher(t, e.HTTPClient(), nil)
	if _, err := f3.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.x"}); !errors.Is(err, charts.ErrUnsupported) || !strings.Contains(err.Error(), "no Azure credential") {
		t.Fatalf("without Options.Azure: %v", err)
	}
}

func fakeJWT(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding
	return enc.EncodeToString([]byte(`{"alg":"none"}`)) + "." + enc.EncodeToString(b) + ".sig"
}

// TestACRExchangeForm checks the exact exchange request and the refresh
// token's lifetime against a registry of the test's own.
func TestACRExchangeForm(t *testing.T) {
	var (
		mu        sync.Mutex
		forms     []map[string]string
		exchanges int
		exp       = time.Now().Add(3 * time.Hour)
	)
	inner := newOCIRegistry(t, "", "")
	a := buildChart(t, "infra", "1.0.0")
	inner.push(t, "charts", a, "infra", "1.0.0")
	refresh := func() string {
		mu.Lock()
		defer mu.Unlock()
		return fakeJWT(map[string]any{"exp": exp.Unix(), "grant_type": "refresh_token"})
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth2/exchange" {
			if err := r.ParseForm(); err != nil || r.Method != http.MethodPost {
				http.Error(w, "bad", 400)
				return
			}
			m := map[string]string{}
			for k := range r.PostForm {
				m[k] = r.PostForm.Get(k)
			}
			mu.Lock()
			forms = append(forms, m)
			exchanges++
			mu.Unlock()
			_ = json.NewEncoder(w).Encode(map[string]string{"refresh_token": refresh()})
			return
		}
		u, p, ok := r.BasicAuth()
		if !ok || u != charts.ACRTokenUsername || p != refresh() {
			w.Header().Set("WWW-Authenticate", `Basic realm="acr"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"no"}]}`, http.StatusUnauthorized)
			return
		}
		// Proxy to the inner registry, as if it were this host.
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, inner.srv.URL+r.URL.RequestURI(), nil)
		resp, err := inner.srv.Client().Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		_, _ = w.Write(buf.Bytes())
	}))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")
	aad := fakeJWT(map[string]any{"tid": "tenant-1", "aud": "https://management.azure.com"})
	var logs bytes.Buffer
	f := newFetcher(t, srv.Client(), func(o *charts.Options) {
		o.Azure = charts.TokenFunc(func(ctx context.Context, scopes []string) (string, error) { return aad, nil })
		o.IndexTTL = -1
		o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	src := charts.Source{Kind: "HelmRepository", Name: "acr", Spec: map[string]any{"type": "oci", "url": "oci://" + host + "/charts", "provider": "azure"}}
	for range 2 {
		if _, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.0.0"}); err != nil {
			t.Fatal(err)
		}
	}
	if logs.Len() == 0 || strings.Contains(logs.String(), aad) || strings.Contains(logs.String(), refresh()) {
		t.Errorf("the debug log is empty or shows a token:\n%s", logs.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if exchanges != 1 {
		t.Fatalf("%d exchanges, want 1", exchanges)
	}
	want := map[string]string{"grant_type": "access_token", "service": host, "access_token": aad, "tenant": "tenant-1"}
	if fmt.Sprint(forms[0]) != fmt.Sprint(want) {
		t.Fatalf("exchange form %v, want %v", forms[0], want)
	}
	// A refresh token expiring within five minutes is exchanged again.
	exp = time.Now().Add(4 * time.Minute)
	mu.Unlock()
	f2 := newFetcher(t, srv.Client(), func(o *charts.Options) {
		o.Azure = charts.TokenFunc(func(ctx context.Context, scopes []string) (string, error) { return aad, nil })
		o.IndexTTL = -1
	})
	for range 2 {
		if _, err := f2.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.0.0"}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	if exchanges != 3 {
		t.Fatalf("%d exchanges, want 3 (a token expiring within 5 minutes is not reused)", exchanges)
	}
}

// TestACRUnderItsAzureHostName: a HelmRepository written as it reads against
// Azure (oci://{registry}.azurecr.io/charts, provider azure) pulls from the
// emulator's registry with no edit, through the emulator's proxy (HTTPS_PROXY,
// as `gitaso emulator` prints it) and its CA, the exchange included.
func TestACRUnderItsAzureHostName(t *testing.T) {
	env := emutest.New(t, emutest.Emulator(emulator.WithRegistry(acrName), emulator.WithoutThrottling()), emutest.Roles("AcrPull"))
	e := env.Emu
	archive := buildChart(t, "infra", "1.2.0")
	if _, err := e.PushHelmChart(bg, acrName, "charts", archive); err != nil {
		t.Fatal(err)
	}
	proxy, err := e.StartLoginProxy()
	if err != nil {
		t.Fatal(err)
	}
	pu, err := url.Parse(proxy)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: e.CertPool(), MinVersion: tls.VersionTLS12}}}
	f := newFetcher(t, client, func(o *charts.Options) {
		o.Azure = charts.AzureTokenSource(emulatorCredential(t, e, env.Principal))
	})
	for _, src := range []charts.Source{
		{Kind: "HelmRepository", Namespace: "flux-system", Name: "acr", Spec: map[string]any{"type": "oci", "url": "oci://" + acrName + ".azurecr.io/charts", "provider": "azure"}},
		{Kind: "HelmRepository", Namespace: "flux-system", Name: "acr-upper", Spec: map[string]any{"type": "oci", "url": "oci://" + strings.ToUpper(acrName) + ".azurecr.io/charts", "provider": "azure"}},
	} {
		c, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra", Version: "1.x"})
		if err != nil {
			t.Fatalf("%s: %v", src.Spec["url"], err)
		}
		if c.Version != "1.2.0" || !bytes.Equal(c.Archive, archive) {
			t.Errorf("%s: got %s", src.Spec["url"], c.Version)
		}
	}
	// A registry the emulator does not serve is not reached.
	other := charts.Source{Kind: "HelmRepository", Namespace: "flux-system", Name: "other", Spec: map[string]any{"type": "oci", "url": "oci://elsewhere1.azurecr.io/charts", "provider": "azure"}}
	if _, err := f.Fetch(bg, charts.Request{Source: other, Chart: "infra", Version: "1.x"}); err == nil {
		t.Error("a registry the emulator does not serve answered")
	}
}
