package emulator_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/gitaso/gitaso/emulator"
)

func cloudConfig(e *emulator.Emulator) cloud.Configuration {
	return cloud.Configuration{
		ActiveDirectoryAuthorityHost: e.AuthorityHost(),
		Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
			cloud.ResourceManager: {Audience: emulator.ARMAudience, Endpoint: e.ARMEndpoint()},
		},
	}
}

func clientOptions(e *emulator.Emulator) azcore.ClientOptions {
	return azcore.ClientOptions{Cloud: cloudConfig(e), Transport: e.HTTPClient()}
}

func secretCred(t testing.TB, e *emulator.Emulator, sp emulator.ServicePrincipal) azcore.TokenCredential {
	t.Helper()
	cred, err := azidentity.NewClientSecretCredential(e.TenantID(), sp.ClientID, sp.Secret, &azidentity.ClientSecretCredentialOptions{
		ClientOptions: clientOptions(e), DisableInstanceDiscovery: true,
	})
	if err != nil {
		t.Fatalf("client secret credential: %v", err)
	}
	return cred
}

// client is an azcore ARM pipeline against the emulator.
type client struct {
	t  testing.TB
	e  *emulator.Emulator
	pl runtime.Pipeline
}

func newClient(t testing.TB, e *emulator.Emulator, cred azcore.TokenCredential, retries int32) *client {
	t.Helper()
	c, err := arm.NewClient("gitaso-emulator-test", "v0.0.1", cred, &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud: cloudConfig(e), Transport: e.HTTPClient(),
			Retry: policy.RetryOptions{MaxRetries: retries, RetryDelay: 10 * time.Millisecond, MaxRetryDelay: 3 * time.Second},
		},
		DisableRPRegistration: true,
	})
	if err != nil {
		t.Fatalf("arm client: %v", err)
	}
	return &client{t: t, e: e, pl: c.Pipeline()}
}

// ownerClient creates a service principal with Owner on the default subscription and a pipeline for it.
func ownerClient(t testing.TB, e *emulator.Emulator) (*client, emulator.ServicePrincipal) {
	t.Helper()
	sp, err := e.AddPrincipal(emulator.PrincipalSpec{ServicePrincipal: emulator.ServicePrincipal{DisplayName: "owner"},
		Roles: []emulator.RoleGrant{{Role: "Owner"}}})
	if err != nil {
		t.Fatalf("add principal: %v", err)
	}
	return newClient(t, e, secretCred(t, e, sp), -1), sp
}

type result struct {
	status int
	header http.Header
	body   map[string]any
	raw    []byte
}

func (r result) code() string {
	if m, ok := r.body["error"].(map[string]any); ok {
		s, _ := m["code"].(string)
		return s
	}
	return ""
}

func (r result) str(path ...string) string {
	var cur any = r.body
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return ""
		}
		cur = m[p]
	}
	s, _ := cur.(string)
	return s
}

// do sends a request; path may contain a query. apiVersion "" sends none.
func (c *client) do(method, path, apiVersion string, body any) result {
	c.t.Helper()
	resp := c.doResp(method, path, apiVersion, body)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	r := result{status: resp.StatusCode, header: resp.Header, raw: raw}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &r.body)
	}
	return r
}

func (c *client) doResp(method, path, apiVersion string, body any) *http.Response {
	c.t.Helper()
	u := c.e.ARMEndpoint() + path
	if apiVersion != "" {
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		u += sep + "api-version=" + apiVersion
	}
	req, err := runtime.NewRequest(context.Background(), method, u)
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	if body != nil {
		var b []byte
		switch v := body.(type) {
		case []byte:
			b = v
		case string:
			b = []byte(v)
		default:
			b, _ = json.Marshal(v)
		}
		if err := req.SetBody(streamingNopCloser(b), "application/json"); err != nil {
			c.t.Fatalf("set body: %v", err)
		}
	}
	resp, err := c.pl.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }

func streamingNopCloser(b []byte) nopCloser { return nopCloser{bytes.NewReader(b)} }

// putAndWait PUTs and, for an LRO, polls to completion with runtime.NewPoller; it returns the final resource.
func (c *client) putAndWait(path, apiVersion string, body any) (map[string]any, error) {
	c.t.Helper()
	resp := c.doResp(http.MethodPut, path, apiVersion, body)
	return c.wait(resp)
}

func (c *client) wait(resp *http.Response) (map[string]any, error) {
	c.t.Helper()
	if resp.StatusCode >= 300 {
		return nil, runtime.NewResponseError(resp)
	}
	async := resp.Header.Get("Azure-AsyncOperation") != "" || resp.StatusCode == http.StatusAccepted
	if !async {
		// synchronous answer (a sync 201 carries a relative Location that pollers must not follow)
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil && err != io.EOF {
			return nil, err
		}
		return m, nil
	}
	poller, err := runtime.NewPoller[map[string]any](resp, c.pl, nil)
	if err != nil {
		return nil, err
	}
	out, err := poller.PollUntilDone(context.Background(), &runtime.PollUntilDoneOptions{Frequency: time.Second})
	return out, err
}

func (c *client) deleteAndWait(path, apiVersion string) (int, error) {
	c.t.Helper()
	resp := c.doResp(http.MethodDelete, path, apiVersion, nil)
	if resp.StatusCode != http.StatusAccepted {
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			return resp.StatusCode, runtime.NewResponseError(resp)
		}
		return resp.StatusCode, nil
	}
	poller, err := runtime.NewPoller[struct{}](resp, c.pl, nil)
	if err != nil {
		return resp.StatusCode, err
	}
	_, err = poller.PollUntilDone(context.Background(), &runtime.PollUntilDoneOptions{Frequency: time.Second})
	return http.StatusAccepted, err
}

func newEmulator(t testing.TB, opts ...emulator.Option) *emulator.Emulator {
	t.Helper()
	e, err := emulator.New(opts...)
	if err != nil {
		t.Fatalf("emulator.New: %v", err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return e
}

func rgPath(e *emulator.Emulator, rg string) string {
	return "/subscriptions/" + e.SubscriptionID() + "/resourceGroups/" + rg
}

const (
	rgAPI      = "2020-06-01"
	storageAPI = "2023-01-01"
	miAPI      = "2023-01-31"
	authzAPI   = "2022-04-01"
)
