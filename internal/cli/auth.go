package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/api"
)

// authSettings are serve's flags of who may call the API: named tokens for
// machines, OpenID Connect sign-in for people (docs/security.md).
type authSettings struct {
	tokenFile, tokensFile                     string
	issuer, clientID, secretFile, groupsClaim string
	redirectURL, caFile, sessionKeyFile       string
	sessionLifetime                           time.Duration
	insecureNoAuth                            bool
	tokens                                    *api.Tokens // after apply
}

func (a *authSettings) register(fs *pflag.FlagSet) {
	fs.StringVar(&a.tokenFile, "api-token-file", "", "file with one bearer token, the token named \"default\" (see --api-tokens-file for several)")
	fs.StringVar(&a.tokensFile, "api-tokens-file", "", "file of named bearer tokens, a line each: NAME sha256:HEX [GROUP,...] (gitaso token add writes it); re-read when it changes or on SIGHUP, so a removed line revokes its token without a restart")
	fs.StringVar(&a.issuer, "oidc-issuer", "", "sign people in with this OpenID Connect issuer, e.g. https://login.microsoftonline.com/<tenant>/v2.0 (with --oidc-client-id and --oidc-redirect-url)")
	fs.StringVar(&a.clientID, "oidc-client-id", "", "the application (client) ID registered with the issuer")
	fs.StringVar(&a.secretFile, "oidc-client-secret-file", "", "file with the application's client secret (none: a public client, PKCE only)")
	fs.StringVar(&a.groupsClaim, "oidc-groups-claim", api.DefaultGroupsClaim, "the ID token claim holding the user's groups")
	fs.StringVar(&a.redirectURL, "oidc-redirect-url", "", "gitaso's callback as the browser reaches it, registered with the issuer, e.g. https://gitaso.example.com/auth/callback (default http://<--listen>/auth/callback on loopback); https makes the cookies Secure")
	fs.StringVar(&a.caFile, "oidc-ca-file", "", "PEM file of extra CAs to trust for the issuer (e.g. the emulator's ca.pem)")
	fs.StringVar(&a.sessionKeyFile, "session-key-file", "", "file with the key (at least 32 bytes) that encrypts the session cookies (default: <--state>.session-key, made at first start); replacing it signs everyone out")
	fs.DurationVar(&a.sessionLifetime, "session-lifetime", api.DefaultSessionLifetime, "how long a sign-in lasts before the user signs in again (and the groups are read anew)")
	fs.BoolVar(&a.insecureNoAuth, "insecure-no-auth", false, "allow --listen beyond loopback with neither sign-in nor tokens (e.g. an authenticating proxy in front): anyone who reaches gitaso may then read and act")
}

// apply fills the API's authentication options.
func (a *authSettings) apply(o *api.Options, listen, stateFile string, log *slog.Logger) error {
	o.InsecureNoAuth = a.insecureNoAuth
	tokens, err := api.LoadTokens(a.tokensFile, log)
	if err != nil {
		return fmt.Errorf("--api-tokens-file: %w", err)
	}
	if a.tokenFile != "" {
		token, err := readTrim(a.tokenFile)
		if err != nil {
			return fmt.Errorf("read --api-token-file: %w", err)
		}
		if token == "" {
			return fmt.Errorf("--api-token-file %s is empty", a.tokenFile)
		}
		if err := tokens.AddFixed(api.DefaultTokenName, token); err != nil {
			return fmt.Errorf("--api-token-file: %w", err)
		}
	}
	if tokens.Len() > 0 {
		o.Tokens, a.tokens = tokens, tokens
	}
	if a.issuer == "" {
		for _, f := range []string{"oidc-client-id", "oidc-client-secret-file", "oidc-redirect-url", "oidc-ca-file"} {
			if v := map[string]string{"oidc-client-id": a.clientID, "oidc-client-secret-file": a.secretFile,
				"oidc-redirect-url": a.redirectURL, "oidc-ca-file": a.caFile}[f]; v != "" {
				return fmt.Errorf("--%s is set without --oidc-issuer", f)
			}
		}
		return nil
	}
	si := &api.SignIn{Issuer: a.issuer, ClientID: a.clientID, GroupsClaim: a.groupsClaim, RedirectURL: a.redirectURL,
		SessionLifetime: a.sessionLifetime}
	if si.RedirectURL == "" {
		if !api.IsLoopback(listen) {
			return fmt.Errorf("--oidc-redirect-url is required when --listen %s is not loopback: the address browsers reach gitaso at, e.g. https://gitaso.example.com/auth/callback", listen)
		}
		si.RedirectURL = "http://" + listen + "/auth/callback"
	}
	if a.secretFile != "" {
		if si.ClientSecret, err = readTrim(a.secretFile); err != nil {
			return fmt.Errorf("read --oidc-client-secret-file: %w", err)
		}
		if si.ClientSecret == "" {
			return fmt.Errorf("--oidc-client-secret-file %s is empty", a.secretFile)
		}
	}
	if si.HTTPClient, err = issuerClient(a.caFile); err != nil {
		return err
	}
	keyFile := a.sessionKeyFile
	if keyFile == "" {
		keyFile = stateFile + ".session-key"
	}
	if si.SessionKey, err = sessionKey(keyFile, a.sessionKeyFile == ""); err != nil {
		return err
	}
	o.SignIn = si
	return nil
}

// issuerClient is the HTTP client that reaches the issuer, trusting the
// system's CAs and those of caFile.
func issuerClient(caFile string) (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("read --oidc-ca-file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--oidc-ca-file %s: no PEM certificate in it", caFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}, nil
}

// sessionKey reads the session key file, or, with create, makes it (32
// random bytes, base64, mode 0600) when absent. Replicas sharing the state
// directory share the key: of two starts at once one writes it (a hard link
// never replaces a file) and both read it.
func sessionKey(path string, create bool) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := makeSessionKey(path); err != nil {
			return nil, err
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read --session-key-file: %w", err)
	}
	key := []byte(strings.TrimSpace(string(b)))
	if len(key) < api.MinSessionKey {
		return nil, fmt.Errorf("--session-key-file %s: %d bytes, want at least %d (e.g. head -c 32 /dev/urandom | base64 > %s)", path, len(key), api.MinSessionKey, path)
	}
	return key, nil
}

// makeSessionKey writes a new key at path unless a file is there already.
func makeSessionKey(path string) error {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return fmt.Errorf("session key: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".session-key-*")
	if err != nil {
		return fmt.Errorf("session key %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.WriteString(base64.StdEncoding.EncodeToString(raw) + "\n")
	if err := errors.Join(werr, tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("session key %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("session key %s: %w", path, err)
	}
	return nil
}

// reloadOnHangup re-reads the tokens file on every SIGHUP until ctx ends.
func (a *authSettings) reloadOnHangup(ctx context.Context, log *slog.Logger) {
	if a.tokens == nil || a.tokensFile == "" {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		defer signal.Stop(ch)
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				if err := a.tokens.Reload(); err != nil {
					log.Error("SIGHUP: tokens file not reloaded", "error", err)
				}
			}
		}
	}()
}
