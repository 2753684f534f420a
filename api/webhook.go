package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
)

// maxWebhookBody bounds what a push notification may send.
const maxWebhookBody = 1 << 20

// webhook is POST /api/v1/webhook: a Git host's push notification (like
// Flux's Receiver) makes the daemon fetch the branch now instead of at the
// next poll. It is accepted when it proves it knows Options.WebhookSecret:
// GitHub's X-Hub-Signature-256 (HMAC-SHA256 of the body; Gitea's and
// Forgejo's X-Gitea-Signature is the same without "sha256="), GitLab's
// X-Gitlab-Token, or "Authorization: Bearer <secret>" for anything else. The
// body is not interpreted: the branch is fetched and only a new revision
// runs.
func (s *server) webhook(w http.ResponseWriter, r *http.Request) {
	if s.opts.Webhook == nil || s.opts.WebhookSecret == "" {
		s.writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "the webhook receiver is not configured (--webhook-secret-file)")
		return
	}
	body, ok := s.readBody(w, r, maxWebhookBody)
	if !ok {
		return
	}
	if !webhookAuthentic(r, body, s.opts.WebhookSecret) {
		s.writeError(w, http.StatusUnauthorized, CodeUnauthorized, "the webhook signature or token does not match")
		return
	}
	if err := s.opts.Webhook(r.Context()); err != nil {
		s.writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "not triggered: "+err.Error())
		return
	}
	s.writeJSON(w, http.StatusAccepted, struct {
		Status string `json:"status"`
	}{"accepted"})
}

func webhookAuthentic(r *http.Request, body []byte, secret string) bool {
	sig := r.Header.Get("X-Hub-Signature-256")
	if sig == "" {
		// Gitea and Forgejo: the same HMAC, hex without a prefix.
		sig = r.Header.Get("X-Gitea-Signature")
	}
	if sig != "" {
		want, err := hex.DecodeString(strings.TrimPrefix(sig, "sha256="))
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hmac.Equal(mac.Sum(nil), want)
	}
	token := r.Header.Get("X-Gitlab-Token")
	if token == "" {
		token, _ = bearer(r.Header.Get("Authorization"))
	}
	return token != "" && subtle.ConstantTimeCompare([]byte(token), []byte(secret)) == 1
}
