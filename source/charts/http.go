package charts

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// basicAuth is a user name and password; String hides the password.
type basicAuth struct{ user, pass string }

func (b *basicAuth) String() string { return "basic auth for " + b.user }

// id identifies the credentials in cache keys without holding them.
func (b *basicAuth) id() string {
	if b == nil {
		return "anonymous"
	}
	return sha256Hex([]byte(b.user + "\x00" + b.pass))[:16]
}

// secretBasic returns the username/password of a Secret, nil when it has
// neither; one without the other is an error, as in Flux.
func secretBasic(s Secret) (*basicAuth, error) {
	u, p := s["username"], s["password"]
	switch {
	case u == "" && p == "":
		return nil, nil
	case u == "" || p == "":
		return nil, fmt.Errorf("%w: the secretRef Secret has %s but not %s", ErrInvalid, map[bool]string{true: "username", false: "password"}[u != ""], map[bool]string{true: "password", false: "username"}[u != ""])
	}
	return &basicAuth{user: u, pass: p}, nil
}

// tlsMaterial returns the CA, client certificate and key of a Secret:
// ca.crt, tls.crt and tls.key (certSecretRef), or the deprecated caFile,
// certFile and keyFile of a secretRef.
func tlsMaterial(s Secret) (ca, cert, key []byte) {
	pick := func(a, b string) []byte {
		if v := s[a]; v != "" {
			return []byte(v)
		}
		if v := s[b]; v != "" {
			return []byte(v)
		}
		return nil
	}
	return pick("ca.crt", "caFile"), pick("tls.crt", "certFile"), pick("tls.key", "keyFile")
}

// transport returns the round tripper for a source: the base one, or a
// copy of it trusting the Secret's CA and presenting its client
// certificate.
func (f *Fetcher) transport(s Secret) (http.RoundTripper, error) {
	ca, cert, key := tlsMaterial(s)
	if ca == nil && cert == nil && key == nil {
		return f.base, nil
	}
	id := sha256Hex([]byte(string(ca) + "\x00" + string(cert) + "\x00" + string(key)))
	f.mu.Lock()
	rt, ok := f.transports[id]
	f.mu.Unlock()
	if ok {
		return rt, nil
	}
	bt, ok := f.base.(*http.Transport)
	if !ok {
		return nil, fmt.Errorf("%w: the Secret's TLS material needs an *http.Transport (Options.HTTPClient)", ErrInvalid)
	}
	t := bt.Clone()
	cfg := t.TLSClientConfig
	if cfg == nil {
		cfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if ca != nil {
		pool := cfg.RootCAs
		if pool == nil {
			sys, err := x509.SystemCertPool()
			if err != nil || sys == nil {
				sys = x509.NewCertPool()
			}
			pool = sys
		} else {
			pool = pool.Clone()
		}
		if !pool.AppendCertsFromPEM(ca) {
			return nil, fmt.Errorf("%w: the Secret's ca.crt holds no PEM certificate", ErrInvalid)
		}
		cfg.RootCAs = pool
	}
	if cert != nil || key != nil {
		pair, err := tls.X509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("%w: the Secret's tls.crt and tls.key: %v", ErrInvalid, err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	t.TLSClientConfig = cfg
	f.mu.Lock()
	f.transports[id] = t
	f.mu.Unlock()
	return t, nil
}

// client is an http.Client over rt with the configured request timeout;
// it follows no redirect from https:// to http://.
func (f *Fetcher) client(rt http.RoundTripper) *http.Client {
	c := &http.Client{Transport: rt, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if req.URL.Scheme != "https" && via[0].URL.Scheme == "https" {
			return fmt.Errorf("%w: redirected from https:// to %s", ErrInsecure, redact(req.URL.String()))
		}
		return nil
	}}
	if f.opts.HTTPClient != nil {
		c.Timeout = f.opts.HTTPClient.Timeout
	}
	return c
}

// httpGet GETs u and returns the response with its body read up to limit
// bytes (a larger body is ErrTooLarge). hdr adds request headers.
func (f *Fetcher) httpGet(ctx context.Context, rt http.RoundTripper, u string, auth *basicAuth, hdr http.Header, limit int64, what string) (*http.Response, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrInvalid, what, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("User-Agent", f.opts.UserAgent)
	if auth != nil {
		req.SetBasicAuth(auth.user, auth.pass)
	}
	resp, err := f.client(rt).Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", what, redactURLError(err))
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode == http.StatusNotModified {
		return resp, nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return resp, nil, statusError(resp, what)
	}
	if resp.ContentLength > limit {
		return resp, nil, fmt.Errorf("%s: %w: %d bytes, the limit is %d", what, ErrTooLarge, resp.ContentLength, limit)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return resp, nil, fmt.Errorf("%s: %w", what, err)
	}
	if int64(len(body)) > limit {
		return resp, nil, fmt.Errorf("%s: %w: more than %d bytes", what, ErrTooLarge, limit)
	}
	return resp, body, nil
}

// statusError describes a response that is not 200.
func statusError(resp *http.Response, what string) error {
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return fmt.Errorf("%s: %w (%s)", what, ErrAuth, resp.Status)
	case http.StatusNotFound:
		return fmt.Errorf("%s: %w (%s)", what, ErrNotFound, resp.Status)
	}
	if unavailableStatus(resp.StatusCode) {
		return fmt.Errorf("%s: %w (%s)", what, ErrUnavailable, resp.Status)
	}
	return fmt.Errorf("%s: %s", what, resp.Status)
}

// redactURLError hides the password and query of a URL in a *url.Error.
func redactURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = redact(ue.URL)
	}
	return err
}

// redact hides a URL's password and query (a query may hold a token, such
// as an Azure Storage SAS of a repository kept in a blob container).
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	if p.User == nil && p.RawQuery == "" {
		return u
	}
	if p.RawQuery != "" {
		p.RawQuery = "redacted"
	}
	return p.Redacted()
}

// sameHost reports whether two URLs have the same scheme host and port.
func sameHost(a, b string) bool {
	pa, err1 := url.Parse(a)
	pb, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && strings.EqualFold(pa.Host, pb.Host)
}
