package api_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/state"
)

func TestWebhook(t *testing.T) {
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var calls atomic.Int32
	const secret = "s3cr3t-hook"
	srv := httptest.NewServer(api.New(db, api.Options{
		Webhook:       func(context.Context) error { calls.Add(1); return nil },
		WebhookSecret: secret,
	}))
	defer srv.Close()
	body := `{"ref":"refs/heads/main"}`
	sign := func(key string) string {
		m := hmac.New(sha256.New, []byte(key))
		m.Write([]byte(body))
		return "sha256=" + hex.EncodeToString(m.Sum(nil))
	}
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"github signature", map[string]string{"X-Hub-Signature-256": sign(secret)}, http.StatusAccepted},
		{"github wrong signature", map[string]string{"X-Hub-Signature-256": sign("other")}, http.StatusUnauthorized},
		{"gitea signature", map[string]string{"X-Gitea-Signature": strings.TrimPrefix(sign(secret), "sha256=")}, http.StatusAccepted},
		{"gitea wrong signature", map[string]string{"X-Gitea-Signature": strings.TrimPrefix(sign("other"), "sha256=")}, http.StatusUnauthorized},
		{"gitlab token", map[string]string{"X-Gitlab-Token": secret}, http.StatusAccepted},
		{"bearer", map[string]string{"Authorization": "Bearer " + secret}, http.StatusAccepted},
		{"nothing", nil, http.StatusUnauthorized},
		{"wrong token", map[string]string{"X-Gitlab-Token": "nope"}, http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := calls.Load()
			req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/webhook", strings.NewReader(body))
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.want)
			}
			triggered := calls.Load() > before
			if triggered != (tc.want == http.StatusAccepted) {
				t.Errorf("triggered = %v", triggered)
			}
		})
	}
	// Not configured: 503.
	off := httptest.NewServer(api.New(db, api.Options{}))
	defer off.Close()
	resp, err := http.Post(off.URL+"/api/v1/webhook", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("unconfigured webhook: %d", resp.StatusCode)
	}
}
