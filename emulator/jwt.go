package emulator

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// errTokenMalformed is returned when a JWT cannot be parsed; errTokenSignature when its signature does not verify.
var (
	errTokenMalformed = errors.New("malformed token")
	errTokenSignature = errors.New("token signature is invalid")
)

// signer signs and verifies RS256 JWTs with one RSA key.
type signer struct {
	key *rsa.PrivateKey
	kid string
}

func newSigner() (*signer, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("generate signing key: %w", err)
	}
	return signerFromKey(k), nil
}

func signerFromKey(k *rsa.PrivateKey) *signer {
	der := x509.MarshalPKCS1PublicKey(&k.PublicKey)
	sum := sha256.Sum256(der)
	return &signer{key: k, kid: base64.RawURLEncoding.EncodeToString(sum[:12])}
}

func loadSigner(keyPEM []byte) (*signer, error) {
	b, _ := pem.Decode(keyPEM)
	if b == nil {
		return nil, errors.New("decode signing key PEM: no block")
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parse signing key: %w", err)
	}
	rk, ok := k.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key is %T, want RSA", k)
	}
	return signerFromKey(rk), nil
}

func (s *signer) keyPEM() ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(s.key)
	if err != nil {
		return nil, fmt.Errorf("marshal signing key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func (s *signer) sign(claims any) (string, error) {
	hdr, err := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": s.kid})
	if err != nil {
		return "", fmt.Errorf("encode JWT header: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("encode JWT claims: %w", err)
	}
	signing := base64.RawURLEncoding.EncodeToString(hdr) + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(signing))
	sig, err := rsa.SignPKCS1v15(rand.Reader, s.key, crypto.SHA256, sum[:])
	if err != nil {
		return "", fmt.Errorf("sign JWT: %w", err)
	}
	return signing + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// verify checks the signature of token and decodes its claims into out.
func (s *signer) verify(token string, out any) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errTokenMalformed
	}
	hdrJSON, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return errTokenMalformed
	}
	var hdr struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	if err := json.Unmarshal(hdrJSON, &hdr); err != nil {
		return errTokenMalformed
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil {
		return errTokenMalformed
	}
	if hdr.Alg != "RS256" || (hdr.Kid != "" && hdr.Kid != s.kid) {
		return errTokenSignature
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(&s.key.PublicKey, crypto.SHA256, sum[:], sig); err != nil {
		return errTokenSignature
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return errTokenMalformed
	}
	if err := json.Unmarshal(payload, out); err != nil {
		return errTokenMalformed
	}
	return nil
}

// jwks returns the JSON Web Key Set publishing the public key.
func (s *signer) jwks() map[string]any {
	pub := s.key.PublicKey
	return map[string]any{"keys": []map[string]any{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": s.kid,
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}}
}

// unverifiedClaims decodes the payload of a JWT without checking it (used only for error messages).
func unverifiedClaims(token string, out any) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errTokenMalformed
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return errTokenMalformed
	}
	if err := json.Unmarshal(payload, out); err != nil {
		return errTokenMalformed
	}
	return nil
}
