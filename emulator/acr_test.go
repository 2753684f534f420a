package emulator_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	helmregistry "helm.sh/helm/v3/pkg/registry"

	"github.com/gitaso/gitaso/emulator"
)

const acrName = "gitasoacr"

// chartArchive builds a packaged Helm chart (.tgz as `helm package` writes it).
func chartArchive(t testing.TB, chartName, version string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	files := []struct{ name, body string }{
		{chartName + "/Chart.yaml", "apiVersion: v2\nname: " + chartName + "\nversion: " + version + "\ndescription: A chart for the emulator's registry\ntype: application\n"},
		{chartName + "/values.yaml", "replicas: 1\n"},
		{chartName + "/templates/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n"},
	}
	for _, f := range files {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// principalWithRoles adds a service principal holding the given roles on scope ("" is the subscription).
func principalWithRoles(t testing.TB, e *emulator.Emulator, displayName, scope string, roles ...string) emulator.ServicePrincipal {
	t.Helper()
	var grants []emulator.RoleGrant
	for _, r := range roles {
		grants = append(grants, emulator.RoleGrant{Role: r, Scope: scope})
	}
	sp, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: displayName}, Roles: grants})
	if err != nil {
		t.Fatalf("add principal: %v", err)
	}
	return sp
}

// entraARMToken gets an ARM token for sp from the emulator's Entra ID with azidentity, as `az acr login` has one.
func entraARMToken(t testing.TB, e *emulator.Emulator, sp emulator.ServicePrincipal) string {
	t.Helper()
	tok, err := secretCred(t, e, sp).GetToken(context.Background(), policy.TokenRequestOptions{Scopes: []string{emulator.ARMAudience + "/.default"}})
	if err != nil {
		t.Fatalf("get token: %v", err)
	}
	return tok.Token
}

type acrResult struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r acrResult) errorCode() string {
	errs, _ := r.body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	m, _ := errs[0].(map[string]any)
	s, _ := m["code"].(string)
	return s
}

func acrDo(t testing.TB, e *emulator.Emulator, req *http.Request) acrResult {
	t.Helper()
	resp, err := e.HTTPClient().Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	r := acrResult{status: resp.StatusCode, header: resp.Header, raw: raw}
	_ = json.Unmarshal(raw, &r.body)
	return r
}

func acrGet(t testing.TB, e *emulator.Emulator, u, authz string) acrResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if authz != "" {
		req.Header.Set("Authorization", authz)
	}
	req.Header.Set("Accept", emulator.OCIManifestMediaType)
	return acrDo(t, e, req)
}

func acrPostForm(t testing.TB, e *emulator.Emulator, u string, form url.Values) acrResult {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return acrDo(t, e, req)
}

// exchange calls POST /oauth2/exchange as az acr login does.
func exchange(t testing.TB, e *emulator.Emulator, host, aadToken string) acrResult {
	t.Helper()
	return acrPostForm(t, e, "https://"+host+"/oauth2/exchange", url.Values{"grant_type": {"access_token"}, "service": {host},
		"tenant": {e.TenantID()}, "access_token": {aadToken}})
}

// accessToken calls POST /oauth2/token with a refresh token.
func accessToken(t testing.TB, e *emulator.Emulator, host, refresh string, scopes ...string) acrResult {
	t.Helper()
	return acrPostForm(t, e, "https://"+host+"/oauth2/token", url.Values{"grant_type": {"refresh_token"}, "service": {host},
		"scope": scopes, "refresh_token": {refresh}})
}

// claims decodes a JWT's payload (no verification: the emulator verifies).
func claims(t testing.TB, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func remoteOpts(e *emulator.Emulator, a authn.Authenticator) []remote.Option {
	return []remote.Option{remote.WithTransport(e.HTTPClient().Transport), remote.WithAuth(a)}
}

// TestACRTokenExchangeAndPull is the flow of az acr login + a registry client: anonymous challenge, exchange of an
// Entra ARM token for a refresh token, an access token for a scope, a pull with go-containerregistry.
func TestACRTokenExchangeAndPull(t *testing.T) {
	e := newEmulator(t, emulator.WithRegistry(acrName), emulator.WithoutThrottling())
	host := e.RegistryHost(acrName)
	if host == "" || e.RegistryHost("") != host || !strings.HasPrefix(host, "127.0.0.1:") {
		t.Fatalf("RegistryHost = %q", host)
	}
	ctx := context.Background()
	chart := chartArchive(t, "demo", "0.1.0+build.1")
	pushed, err := e.PushHelmChart(ctx, acrName, "charts", chart)
	if err != nil {
		t.Fatalf("push chart: %v", err)
	}
	if pushed.Repository != "charts/demo" || pushed.Tag != "0.1.0_build.1" || pushed.Ref != host+"/charts/demo:0.1.0_build.1" {
		t.Fatalf("pushed = %+v", pushed)
	}

	// Anonymous: ACR's challenge.
	r := acrGet(t, e, "https://"+host+"/v2/", "")
	if r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" {
		t.Fatalf("anonymous /v2/: %d %s", r.status, r.raw)
	}
	if got, want := r.header.Get("WWW-Authenticate"), `Bearer realm="https://`+host+`/oauth2/token",service="`+host+`"`; got != want {
		t.Fatalf("challenge = %q, want %q", got, want)
	}
	manifestURL := "https://" + host + "/v2/charts/demo/manifests/" + pushed.Tag
	r = acrGet(t, e, manifestURL, "")
	if got, want := r.header.Get("WWW-Authenticate"), `Bearer realm="https://`+host+`/oauth2/token",service="`+host+`",scope="repository:charts/demo:pull"`; r.status != 401 || got != want {
		t.Fatalf("anonymous manifest: %d %q, want %q", r.status, got, want)
	}

	// Exchange a real Entra token (azidentity, client secret) for a refresh token.
	puller := principalWithRoles(t, e, "puller", "", "AcrPull")
	r = exchange(t, e, host, entraARMToken(t, e, puller))
	refresh, _ := r.body["refresh_token"].(string)
	if r.status != http.StatusOK || refresh == "" {
		t.Fatalf("exchange: %d %s", r.status, r.raw)
	}
	if c := claims(t, refresh); c["iss"] != "Azure Container Registry" || c["aud"] != host || c["grant_type"] != "refresh_token" || c["sub"] != puller.ObjectID {
		t.Fatalf("refresh token claims: %v", c)
	}

	// An access token for the repository, then the manifest.
	r = accessToken(t, e, host, refresh, "repository:charts/demo:pull")
	access, _ := r.body["access_token"].(string)
	if r.status != http.StatusOK || access == "" {
		t.Fatalf("token: %d %s", r.status, r.raw)
	}
	if got, want := claims(t, access)["access"], []any{map[string]any{"type": "repository", "name": "charts/demo", "actions": []any{"pull"}}}; !cmp.Equal(got, want) {
		t.Fatalf("access claim: %s", cmp.Diff(want, got))
	}
	r = acrGet(t, e, manifestURL, "Bearer "+access)
	if r.status != http.StatusOK || r.header.Get("Docker-Content-Digest") != pushed.Digest {
		t.Fatalf("manifest: %d %v %s", r.status, r.header, r.raw)
	}
	cfg, _ := r.body["config"].(map[string]any)
	layers, _ := r.body["layers"].([]any)
	if cfg["mediaType"] != emulator.HelmConfigMediaType || len(layers) != 1 || layers[0].(map[string]any)["mediaType"] != emulator.HelmChartLayerMediaType {
		t.Fatalf("manifest body: %s", r.raw)
	}
	// The GET form with basic credentials (docker's flow) gives an access token too.
	req, _ := http.NewRequest(http.MethodGet, "https://"+host+"/oauth2/token?service="+url.QueryEscape(host)+"&scope="+url.QueryEscape("repository:charts/demo:pull"), nil)
	req.SetBasicAuth(emulator.ACRTokenUsername, refresh)
	if r := acrDo(t, e, req); r.status != http.StatusOK || r.body["access_token"] == nil {
		t.Fatalf("GET token with basic: %d %s", r.status, r.raw)
	}

	// go-containerregistry's remote, with the refresh token as identity token (POST grant_type=refresh_token) and as
	// a password for the null GUID (GET with basic credentials): the chart layer comes back byte for byte.
	ref, err := name.ParseReference(pushed.Ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []authn.Authenticator{
		authn.FromConfig(authn.AuthConfig{IdentityToken: refresh}),
		&authn.Basic{Username: emulator.ACRTokenUsername, Password: refresh},
		&authn.Basic{Username: puller.ClientID, Password: puller.Secret},
	} {
		img, err := remote.Image(ref, remoteOpts(e, a)...)
		if err != nil {
			t.Fatalf("remote.Image: %v", err)
		}
		m, err := img.Manifest()
		if err != nil {
			t.Fatalf("manifest: %v", err)
		}
		if string(m.Config.MediaType) != emulator.HelmConfigMediaType {
			t.Fatalf("config media type %s", m.Config.MediaType)
		}
		l, err := img.LayerByDigest(m.Layers[0].Digest)
		if err != nil {
			t.Fatal(err)
		}
		rc, err := l.Compressed()
		if err != nil {
			t.Fatalf("layer: %v", err)
		}
		got, err := io.ReadAll(rc)
		rc.Close()
		if err != nil || !bytes.Equal(got, chart) {
			t.Fatalf("layer differs from the chart (err %v)", err)
		}
	}
}

// TestACRRefusals covers the credentials and scopes ACR refuses.
func TestACRRefusals(t *testing.T) {
	e := newEmulator(t, emulator.WithRegistry(acrName), emulator.WithRegistry("otheracr"), emulator.WithoutThrottling())
	host := e.RegistryHost(acrName)
	ctx := context.Background()
	pushed, err := e.PushHelmChart(ctx, "", "charts", chartArchive(t, "demo", "1.0.0"))
	if err != nil {
		t.Fatal(err)
	}
	manifestURL := "https://" + host + "/v2/charts/demo/manifests/1.0.0"
	puller := principalWithRoles(t, e, "puller", "", "AcrPull")
	nobody := principalWithRoles(t, e, "nobody", "")
	foreign := newEmulator(t)
	foreignSP := principalWithRoles(t, foreign, "foreign", "", "Owner")

	t.Run("Entra tokens the exchange refuses", func(t *testing.T) {
		expired, _ := e.IssueAccessToken(puller.ObjectID, emulator.ARMAudience, time.Now().Add(-time.Minute))
		storage, _ := e.IssueAccessToken(puller.ObjectID, "https://storage.azure.com", time.Now().Add(time.Hour))
		for name, tok := range map[string]string{
			"expired":        expired,
			"wrong audience": storage,
			"foreign issuer": entraARMToken(t, foreign, foreignSP),
			"garbage":        "not.a.token",
		} {
			if r := exchange(t, e, host, tok); r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" {
				t.Errorf("%s: %d %s", name, r.status, r.raw)
			}
		}
		good := entraARMToken(t, e, puller)
		if r := acrPostForm(t, e, "https://"+host+"/oauth2/exchange", url.Values{"grant_type": {"access_token"}, "service": {host},
			"tenant": {"11111111-2222-4333-8444-555555555555"}, "access_token": {good}}); r.status != http.StatusUnauthorized {
			t.Errorf("wrong tenant: %d %s", r.status, r.raw)
		}
		if r := acrPostForm(t, e, "https://"+host+"/oauth2/exchange", url.Values{"grant_type": {"access_token"}, "service": {"elsewhere.azurecr.io"},
			"access_token": {good}}); r.status != http.StatusBadRequest {
			t.Errorf("wrong service: %d %s", r.status, r.raw)
		}
		if r := acrGet(t, e, "https://"+host+"/oauth2/exchange", ""); r.status != http.StatusNotFound {
			t.Errorf("GET exchange: %d", r.status)
		}
	})

	t.Run("refresh tokens the token endpoint refuses", func(t *testing.T) {
		expired, err := e.IssueRegistryRefreshToken(acrName, puller.ObjectID, time.Now().Add(-time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		other, _ := e.IssueRegistryRefreshToken("otheracr", puller.ObjectID, time.Now().Add(time.Hour))
		entra := entraARMToken(t, e, puller)
		for name, tok := range map[string]string{"expired": expired, "other registry": other, "an Entra token": entra} {
			if r := accessToken(t, e, host, tok, "repository:charts/demo:pull"); r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" {
				t.Errorf("%s: %d %s", name, r.status, r.raw)
			}
		}
		req, _ := http.NewRequest(http.MethodGet, "https://"+host+"/oauth2/token?service="+host+"&scope=repository:charts/demo:pull", nil)
		req.SetBasicAuth(puller.ClientID, "wrong secret")
		if r := acrDo(t, e, req); r.status != http.StatusUnauthorized {
			t.Errorf("wrong secret: %d %s", r.status, r.raw)
		}
	})

	t.Run("no pull role", func(t *testing.T) {
		r := exchange(t, e, host, entraARMToken(t, e, nobody))
		refresh, _ := r.body["refresh_token"].(string)
		if r.status != http.StatusOK {
			t.Fatalf("exchange: %d %s", r.status, r.raw)
		}
		r = accessToken(t, e, host, refresh, "repository:charts/demo:pull")
		access, _ := r.body["access_token"].(string)
		if r.status != http.StatusOK {
			t.Fatalf("token: %d %s", r.status, r.raw)
		}
		if a, ok := claims(t, access)["access"].([]any); !ok || len(a) != 0 {
			t.Fatalf("access claim of a principal without a role: %v", claims(t, access)["access"])
		}
		r = acrGet(t, e, manifestURL, "Bearer "+access)
		wantDetail := []any{map[string]any{"Type": "repository", "Name": "charts/demo", "Action": "pull"}}
		errs, _ := r.body["errors"].([]any)
		if r.status != http.StatusUnauthorized || r.errorCode() != "UNAUTHORIZED" || len(errs) != 1 || !cmp.Equal(errs[0].(map[string]any)["detail"], wantDetail) ||
			!strings.Contains(r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`) {
			t.Fatalf("pull without role: %d %v %s", r.status, r.header, r.raw)
		}
		ref, _ := name.ParseReference(pushed.Ref)
		_, err := remote.Image(ref, remoteOpts(e, &authn.Basic{Username: emulator.ACRTokenUsername, Password: refresh})...)
		var terr *transport.Error
		if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("remote.Image without role: %v", err)
		}
	})

	t.Run("wrong scope", func(t *testing.T) {
		refresh, _ := e.IssueRegistryRefreshToken(acrName, puller.ObjectID, time.Now().Add(time.Hour))
		r := accessToken(t, e, host, refresh, "repository:charts/other:pull")
		access, _ := r.body["access_token"].(string)
		if r = acrGet(t, e, manifestURL, "Bearer "+access); r.status != http.StatusUnauthorized {
			t.Fatalf("manifest with another repository's token: %d %s", r.status, r.raw)
		}
		// A pull token does not push, and a puller is not granted push.
		r = accessToken(t, e, host, refresh, "repository:charts/demo:pull,push")
		access, _ = r.body["access_token"].(string)
		if got := claims(t, access)["access"]; !cmp.Equal(got, []any{map[string]any{"type": "repository", "name": "charts/demo", "actions": []any{"pull"}}}) {
			t.Fatalf("puller asking for push got %v", got)
		}
		req, _ := http.NewRequest(http.MethodPost, "https://"+host+"/v2/charts/demo/blobs/uploads/", nil)
		req.Header.Set("Authorization", "Bearer "+access)
		if r := acrDo(t, e, req); r.status != http.StatusUnauthorized ||
			!strings.Contains(r.header.Get("WWW-Authenticate"), `scope="repository:charts/demo:push,pull"`) {
			t.Fatalf("push with a pull token: %d %v %s", r.status, r.header, r.raw)
		}
		// An access token of the other registry is not valid here.
		otherRefresh, _ := e.IssueRegistryRefreshToken("otheracr", puller.ObjectID, time.Now().Add(time.Hour))
		otherHost := e.RegistryHost("otheracr")
		r = accessToken(t, e, otherHost, otherRefresh, "repository:charts/demo:pull")
		if r = acrGet(t, e, manifestURL, "Bearer "+r.body["access_token"].(string)); r.status != http.StatusUnauthorized ||
			!strings.Contains(r.header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("other registry's token: %d %v", r.status, r.header)
		}
	})

	t.Run("push needs AcrPush", func(t *testing.T) {
		img, err := random.Image(512, 1)
		if err != nil {
			t.Fatal(err)
		}
		ref, _ := name.ParseReference(host + "/apps/web:v1")
		pusher := principalWithRoles(t, e, "pusher", "", "AcrPush")
		err = remote.Write(ref, img, remoteOpts(e, &authn.Basic{Username: puller.ClientID, Password: puller.Secret})...)
		var terr *transport.Error
		if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("push by a puller: %v", err)
		}
		if err := remote.Write(ref, img, remoteOpts(e, &authn.Basic{Username: pusher.ClientID, Password: pusher.Secret})...); err != nil {
			t.Fatalf("push with AcrPush: %v", err)
		}
		repos, err := e.RegistryRepositories(ctx, acrName)
		if err != nil || !cmp.Equal(repos, []string{"apps/web", "charts/demo"}) {
			t.Fatalf("repositories = %v, %v", repos, err)
		}
	})

	t.Run("catalog and delete", func(t *testing.T) {
		reg, _ := name.NewRegistry(host)
		repos, err := remote.Catalog(ctx, reg, remoteOpts(e, &authn.Basic{Username: puller.ClientID, Password: puller.Secret})...)
		sort.Strings(repos) // go-containerregistry's registry lists the catalog in no order
		if err != nil || !cmp.Equal(repos, []string{"apps/web", "charts/demo"}) {
			t.Fatalf("catalog = %v, %v", repos, err)
		}
		ref, _ := name.ParseReference(host + "/apps/web:v1")
		err = remote.Delete(ref, remoteOpts(e, &authn.Basic{Username: puller.ClientID, Password: puller.Secret})...)
		var terr *transport.Error
		if !errors.As(err, &terr) || terr.StatusCode != http.StatusUnauthorized {
			t.Fatalf("delete by a puller: %v", err)
		}
		deleter := principalWithRoles(t, e, "deleter", "", "AcrDelete")
		if err := remote.Delete(ref, remoteOpts(e, &authn.Basic{Username: deleter.ClientID, Password: deleter.Secret})...); err != nil {
			t.Fatalf("delete with AcrDelete: %v", err)
		}
	})

	t.Run("roles on the registry resource", func(t *testing.T) {
		owner, _ := ownerClient(t, e)
		rg := rgPath(e, "acr")
		if r := owner.do(http.MethodPut, rg, rgAPI, map[string]any{"location": "uksouth"}); r.status != http.StatusCreated {
			t.Fatalf("RG: %d %s", r.status, r.raw)
		}
		regID := rg + "/providers/Microsoft.ContainerRegistry/registries/" + acrName
		if _, err := owner.putAndWait(regID, "2023-07-01", map[string]any{"location": "uksouth", "sku": map[string]any{"name": "Basic"}}); err != nil {
			t.Fatalf("registry resource: %v", err)
		}
		onRegistry := principalWithRoles(t, e, "reader-on-registry", regID, "Reader")
		onOtherRG := principalWithRoles(t, e, "puller-elsewhere", rgPath(e, "elsewhere"), "AcrPull")
		for _, c := range []struct {
			sp   emulator.ServicePrincipal
			want int
		}{{onRegistry, http.StatusOK}, {onOtherRG, http.StatusUnauthorized}, {puller, http.StatusOK}} {
			refresh, _ := e.IssueRegistryRefreshToken(acrName, c.sp.ObjectID, time.Now().Add(time.Hour))
			r := accessToken(t, e, host, refresh, "repository:charts/demo:pull")
			if r = acrGet(t, e, manifestURL, "Bearer "+r.body["access_token"].(string)); r.status != c.want {
				t.Errorf("%s: %d, want %d", c.sp.DisplayName, r.status, c.want)
			}
		}
	})

	t.Run("unknown registry", func(t *testing.T) {
		if _, err := e.PushOCI(ctx, "nosuchacr", "a", "b", emulator.OCIArtifact{}); !errors.Is(err, emulator.ErrNoRegistry) {
			t.Fatalf("err = %v", err)
		}
		if e.RegistryHost("nosuchacr") != "" {
			t.Fatal("host of an unknown registry")
		}
		if _, err := emulator.New(emulator.WithRegistry("a-b")); err == nil {
			t.Fatal("invalid registry name accepted")
		}
	})
}

// TestACRHelmRegistryClient pushes and pulls a chart with Helm's own registry client, logged in the way
// `az acr login --expose-token` + `helm registry login` is: the null GUID and an ACR refresh token.
func TestACRHelmRegistryClient(t *testing.T) {
	e := newEmulator(t, emulator.WithRegistry(acrName), emulator.WithoutThrottling())
	host := e.RegistryHost(acrName)
	chart := chartArchive(t, "platform", "2.3.4")
	pusher := principalWithRoles(t, e, "ci", "", "AcrPush")
	puller := principalWithRoles(t, e, "gitaso", "", "AcrPull")

	client := func(user, pass string) *helmregistry.Client {
		c, err := helmregistry.NewClient(helmregistry.ClientOptBasicAuth(user, pass), helmregistry.ClientOptHTTPClient(e.HTTPClient()),
			helmregistry.ClientOptCredentialsFile(filepath.Join(t.TempDir(), "config.json")))
		if err != nil {
			t.Fatalf("helm registry client: %v", err)
		}
		return c
	}
	ref := host + "/helm/platform:2.3.4"
	if _, err := client(pusher.ClientID, pusher.Secret).Push(chart, ref); err != nil {
		t.Fatalf("helm push: %v", err)
	}

	r := exchange(t, e, host, entraARMToken(t, e, puller))
	refresh, _ := r.body["refresh_token"].(string)
	if refresh == "" {
		t.Fatalf("exchange: %d %s", r.status, r.raw)
	}
	res, err := client(emulator.ACRTokenUsername, refresh).Pull(ref)
	if err != nil {
		t.Fatalf("helm pull: %v", err)
	}
	if !bytes.Equal(res.Chart.Data, chart) || res.Chart.Meta.Name != "platform" || res.Chart.Meta.Version != "2.3.4" {
		t.Fatalf("pulled %s %s (%d bytes)", res.Chart.Meta.Name, res.Chart.Meta.Version, len(res.Chart.Data))
	}

	// A chart put there by the test helper pulls the same way.
	pushed, err := e.PushHelmChart(context.Background(), "", "", chartArchive(t, "addon", "0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	if res, err = client(emulator.ACRTokenUsername, refresh).Pull(pushed.Ref); err != nil || res.Chart.Meta.Name != "addon" {
		t.Fatalf("helm pull of PushHelmChart's chart: %v", err)
	}

	// A principal without a role cannot pull; a refresh token that expired cannot either.
	nobody := principalWithRoles(t, e, "nobody", "")
	norole, _ := e.IssueRegistryRefreshToken("", nobody.ObjectID, time.Now().Add(time.Hour))
	expired, _ := e.IssueRegistryRefreshToken("", puller.ObjectID, time.Now().Add(-time.Second))
	for name, tok := range map[string]string{"no role": norole, "expired": expired} {
		if _, err := client(emulator.ACRTokenUsername, tok).Pull(ref); err == nil {
			t.Errorf("%s: helm pull succeeded", name)
		}
	}
}
