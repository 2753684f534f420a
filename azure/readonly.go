package azure

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// ErrReadOnly is returned (wrapped) when a read-only client is asked to
// send a request that could change Azure.
var ErrReadOnly = errors.New("read-only Azure client: request refused")

// ReadOnly returns clients for cloud whose every request to ARM is checked
// before it leaves the process: GET and HEAD pass, and POST only to Resource
// Graph's query endpoint (how a refresh reads in bulk); PUT, PATCH, DELETE
// and every other POST (listKeys, actions) are refused with ErrReadOnly.
// Requests to Entra ID (tokens) are not ARM's and pass. It is what a plan
// for a pull request uses: whatever its credential may do, it never writes.
func ReadOnly(cloud Cloud, opts Options) (*Clients, error) {
	if cloud.ARMEndpoint == "" {
		cloud = PublicCloud()
	}
	base := opts.HTTPClient
	if base == nil {
		var err error
		if base, err = cloud.HTTPClient(); err != nil {
			return nil, err
		}
	}
	u, err := url.Parse(cloud.ARMEndpoint)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("read-only client: ARM endpoint %q: %v", cloud.ARMEndpoint, err)
	}
	next := base.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	c := *base
	c.Transport = readOnly{next: next, armHost: strings.ToLower(u.Host)}
	opts.HTTPClient = &c
	return NewClients(cloud, opts), nil
}

type readOnly struct {
	next    http.RoundTripper
	armHost string
}

func (t readOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.ToLower(req.URL.Host) == t.armHost && armPath(req.URL.Path) && !readRequest(req.Method, req.URL.Path) {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, &readOnlyError{method: req.Method, path: req.URL.Path}
	}
	return t.next.RoundTrip(req)
}

// readOnlyError is never retried (azcore's errorinfo.NonRetriable).
type readOnlyError struct{ method, path string }

func (e *readOnlyError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrReadOnly, e.method, e.path)
}
func (e *readOnlyError) Unwrap() error { return ErrReadOnly }
func (e *readOnlyError) NonRetriable() {}

// armPath reports whether a path names ARM resources or providers (a
// cloud, or the emulator, may serve Entra ID's token endpoints on the same
// host: /{tenant}/oauth2/v2.0/token).
func armPath(path string) bool {
	p := strings.ToLower(path)
	return strings.HasPrefix(p, "/subscriptions") || strings.HasPrefix(p, "/providers") || strings.HasPrefix(p, "/tenants")
}

// readRequest reports whether an ARM request only reads.
func readRequest(method, path string) bool {
	switch method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return strings.EqualFold(strings.TrimSuffix(path, "/"), "/providers/Microsoft.ResourceGraph/resources")
	}
	return false
}
