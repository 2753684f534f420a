package charts

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// ACRTokenUsername is the user name that tells Azure Container Registry the
// password is a refresh token from its token exchange.
const ACRTokenUsername = "00000000-0000-0000-0000-000000000000"

// acrRefreshMargin: a refresh token is exchanged again this long before it
// expires.
const acrRefreshMargin = 5 * time.Minute

// acrEntry is the cached refresh token of one registry host.
type acrEntry struct {
	mu      sync.Mutex
	refresh string
	exp     time.Time
}

// azureScope is the Entra scope whose token ACR accepts for an exchange:
// ARM's of the registry's cloud.
func (f *Fetcher) azureScope(host string) string {
	if f.opts.AzureScope != "" {
		return f.opts.AzureScope
	}
	h, _, _ := strings.Cut(strings.ToLower(host), ":")
	switch {
	case strings.HasSuffix(h, ".azurecr.cn"):
		return "https://management.chinacloudapi.cn/.default"
	case strings.HasSuffix(h, ".azurecr.us"):
		return "https://management.usgovcloudapi.net/.default"
	}
	return "https://management.azure.com/.default"
}

// acrRefreshToken returns an ACR refresh token for host, exchanged for an
// Entra token from Options.Azure (POST /oauth2/exchange, as Flux's azure
// provider and `az acr login` do) and cached until acrRefreshMargin before
// it expires.
func (f *Fetcher) acrRefreshToken(ctx context.Context, host string, rt http.RoundTripper, scheme string) (string, error) {
	if f.opts.Azure == nil {
		return "", fmt.Errorf("%w: spec.provider azure: gitaso has no Azure credential for Azure Container Registry here (give it one, or use a secretRef with provider generic)", ErrUnsupported)
	}
	f.mu.Lock()
	e := f.acr[host]
	if e == nil {
		e = &acrEntry{}
		f.acr[host] = e
	}
	f.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.refresh != "" && time.Now().Before(e.exp.Add(-acrRefreshMargin)) {
		return e.refresh, nil
	}
	scope := f.azureScope(host)
	aad, err := f.opts.Azure.Token(ctx, []string{scope})
	if err != nil {
		return "", fmt.Errorf("%w: spec.provider azure: Entra token for %s: %v", ErrAuth, scope, err)
	}
	form := url.Values{"grant_type": {"access_token"}, "service": {host}, "access_token": {aad}}
	if tid, _ := jwtClaims(aad)["tid"].(string); tid != "" {
		form.Set("tenant", tid)
	}
	u := scheme + "://" + host + "/oauth2/exchange"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", f.opts.UserAgent)
	resp, err := f.client(rt).Do(req)
	if err != nil {
		return "", fmt.Errorf("ACR token exchange at %s: %w", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("ACR token exchange at %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ACR token exchange at %s: %w: %s%s", u, ErrAuth, resp.Status, acrMessage(body))
	}
	var out struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := json.Unmarshal(body, &out); err != nil || out.RefreshToken == "" {
		return "", fmt.Errorf("ACR token exchange at %s: %w: the answer holds no refresh_token", u, ErrAuth)
	}
	exp := time.Now().Add(acrRefreshMargin + 10*time.Minute) // no exp claim: keep it 10 minutes
	if v, ok := jwtClaims(out.RefreshToken)["exp"].(float64); ok && v > 0 {
		exp = time.Unix(int64(v), 0)
	}
	e.refresh, e.exp = out.RefreshToken, exp
	f.log.Debug("ACR refresh token exchanged", "registry", host, "expires", exp)
	return e.refresh, nil
}

// forgetACR drops the refresh token of a host the registry refused.
func (f *Fetcher) forgetACR(host string) {
	f.mu.Lock()
	e := f.acr[host]
	f.mu.Unlock()
	if e == nil {
		return
	}
	e.mu.Lock()
	e.refresh, e.exp = "", time.Time{}
	e.mu.Unlock()
}

// acrMessage is the message of ACR's error body (never a token).
func acrMessage(body []byte) string {
	var e struct {
		Errors []struct {
			Code, Message string
		} `json:"errors"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Errors) == 0 {
		return ""
	}
	return ": " + e.Errors[0].Code + ": " + e.Errors[0].Message
}

// jwtClaims decodes a JWT's claims without verifying it (nil when it is not
// a JWT).
func jwtClaims(tok string) map[string]any {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}
