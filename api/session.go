package api

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// MinSessionKey is the least number of bytes of a session key.
const MinSessionKey = 32

// maxCookie bounds a cookie's value: browsers keep about 4096 bytes of
// name, value and attributes.
const maxCookie = 3800

// errCookie is returned when a cookie is absent, altered, sealed with
// another key or expired.
var errCookie = errors.New("no valid cookie")

// sealer encrypts and authenticates cookie values (AES-256-GCM, the cookie's
// name as additional data: one cookie's value is not valid as another's).
type sealer struct{ aead cipher.AEAD }

// newSealer derives the key of one purpose from the session key.
func newSealer(key []byte, purpose string) (*sealer, error) {
	if len(key) < MinSessionKey {
		return nil, fmt.Errorf("session key: %d bytes, want at least %d", len(key), MinSessionKey)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte("gitaso cookie key v1\x00" + purpose))
	block, err := aes.NewCipher(mac.Sum(nil))
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("session key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

func (s *sealer) seal(name string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode cookie %s: %w", name, err)
	}
	nonce := make([]byte, s.aead.NonceSize(), s.aead.NonceSize()+len(b)+s.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal cookie %s: %w", name, err)
	}
	return base64.RawURLEncoding.EncodeToString(s.aead.Seal(nonce, nonce, b, []byte(name))), nil
}

func (s *sealer) open(name, value string, v any) error {
	raw, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil || len(raw) < s.aead.NonceSize() {
		return errCookie
	}
	b, err := s.aead.Open(nil, raw[:s.aead.NonceSize()], raw[s.aead.NonceSize():], []byte(name))
	if err != nil {
		return errCookie
	}
	if json.Unmarshal(b, v) != nil {
		return errCookie
	}
	return nil
}

// session is what the session cookie holds: who signed in, until when, and
// the token a state-changing request of this session must carry
// (X-CSRF-Token).
type session struct {
	Subject string   `json:"sub"`
	Name    string   `json:"name,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	Issuer  string   `json:"iss"`
	Expires int64    `json:"exp"`
	CSRF    string   `json:"csrf"`
}

// loginState is what the login cookie holds between /auth/login and
// /auth/callback: the state, nonce and PKCE verifier of one sign-in and
// where to go afterwards.
type loginState struct {
	State    string `json:"state"`
	Nonce    string `json:"nonce"`
	Verifier string `json:"verifier"`
	Return   string `json:"return"`
	Expires  int64  `json:"exp"`
}

// cookieJar names and writes the API's cookies. With secure (sign-in over
// https) they carry Secure and the __Host- prefix (RFC 6265bis: Secure,
// Path=/, no Domain, so no other host or path can set them).
type cookieJar struct {
	secure         bool
	session, login string
}

func newCookieJar(secure bool) cookieJar {
	if secure {
		return cookieJar{secure: true, session: "__Host-gitaso_session", login: "__Host-gitaso_login"}
	}
	return cookieJar{session: "gitaso_session", login: "gitaso_login"}
}

// set writes a cookie: HttpOnly (no script reads it), SameSite=Lax (not
// sent on another site's POST, sent on the identity provider's redirect
// back), Path=/.
func (j cookieJar) set(w http.ResponseWriter, name, value string, expires time.Time) {
	c := &http.Cookie{Name: name, Value: value, Path: "/", HttpOnly: true, Secure: j.secure, SameSite: http.SameSiteLaxMode}
	if value == "" {
		c.MaxAge = -1
	} else {
		c.Expires = expires
		c.MaxAge = int(time.Until(expires).Seconds())
	}
	http.SetCookie(w, c)
}

func randomString(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("api: crypto/rand: %v", err)) // as crypto/rand itself does since Go 1.24
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
