package azure

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"

	"github.com/gitaso/gitaso/aso"
)

// moduleVersion is sent in the User-Agent by azcore's telemetry policy.
const moduleVersion = "v0.1.0"

// Options configure Clients. Start from DefaultOptions.
type Options struct {
	Logger *slog.Logger
	// HTTPClient carries every request, to Entra ID and to ARM. nil: built from
	// the cloud's CA (Cloud.HTTPClient).
	HTTPClient *http.Client
	// Retry is azcore's retry policy. Retries honour Retry-After on 429 and 5xx;
	// a Retry-After longer than MaxRetryDelay is not waited for: the ARMError
	// is returned with its RetryAfter for the caller to schedule. TLS
	// certificate errors are never retried.
	Retry policy.RetryOptions
	// Limits size the per-subscription client-side rate limiter.
	Limits RateLimits
	// PollInterval is the wait between polls of a long-running operation when
	// ARM sends no Retry-After; a Retry-After from ARM always wins.
	PollInterval time.Duration
	// FederatedTokenFile is the service account token used by workload-identity
	// credentials that name none ("" = AZURE_FEDERATED_TOKEN_FILE, else ASO's
	// DefaultFederatedTokenFile).
	FederatedTokenFile string
	// ApplicationID is added to the User-Agent.
	ApplicationID string
	// Metrics, when set, is told about every try of every ARM request
	// (metrics.go).
	Metrics RequestMetrics
}

// DefaultTryTimeout bounds one HTTP try to ARM (azcore's
// RetryOptions.TryTimeout): the answer, body included.
const DefaultTryTimeout = 2 * time.Minute

// DefaultOptions returns the production settings.
func DefaultOptions() Options {
	return Options{
		Retry: policy.RetryOptions{
			MaxRetries:    6,
			RetryDelay:    time.Second,
			MaxRetryDelay: 60 * time.Second,
			// Every try has a deadline: an endpoint that accepts and never
			// answers fails the try (retried as a timeout) instead of holding
			// a run, and the daemon's loop, for good. ARM answers a PUT or a
			// page of a list within seconds; long work is an LRO polled by
			// tries of its own.
			TryTimeout: DefaultTryTimeout,
			StatusCodes: []int{
				http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
				http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
			},
		},
		Limits:        DefaultRateLimits(),
		PollInterval:  2 * time.Second,
		ApplicationID: "gitaso",
	}
}

// Clients hands out ARM clients: one azcore pipeline per credential (cached
// by the credential's content) and one rate limiter per subscription, shared
// by all credentials. It is safe for concurrent use.
type Clients struct {
	cloud  Cloud
	opts   Options
	log    *slog.Logger
	limits *limiters

	httpOnce sync.Once
	http     *http.Client
	httpErr  error

	mu      sync.Mutex
	clients map[string]*Client
}

// NewClients returns a client cache for cloud (the public cloud when cloud is
// the zero value). Problems with the cloud's CA file surface from For.
func NewClients(cloud Cloud, opts Options) *Clients {
	if cloud.ARMEndpoint == "" {
		cloud = PublicCloud()
	}
	if cloud.Audience == "" {
		cloud.Audience = PublicARMAudience
	}
	d := DefaultOptions()
	if opts.PollInterval <= 0 {
		opts.PollInterval = d.PollInterval
	}
	if opts.Limits == (RateLimits{}) {
		opts.Limits = d.Limits
	}
	if opts.Limits.Disabled {
		opts.Limits = RateLimits{Disabled: true}
	}
	if opts.ApplicationID == "" {
		opts.ApplicationID = d.ApplicationID
	}
	if opts.Retry.ShouldRetry == nil {
		codes := opts.Retry.StatusCodes
		if codes == nil {
			codes = d.Retry.StatusCodes
		}
		opts.Retry.ShouldRetry = func(resp *http.Response, err error) bool {
			if err != nil {
				return !isCertificateError(err) // an untrusted server stays untrusted
			}
			return runtime.HasStatusCode(resp, codes...)
		}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Clients{
		cloud:   cloud,
		opts:    opts,
		log:     log,
		limits:  &limiters{limits: opts.Limits},
		clients: map[string]*Client{},
	}
}

func (cs *Clients) httpClient() (*http.Client, error) {
	cs.httpOnce.Do(func() {
		if cs.opts.HTTPClient != nil {
			cs.http = cs.opts.HTTPClient
			return
		}
		cs.http, cs.httpErr = cs.cloud.HTTPClient()
	})
	return cs.http, cs.httpErr
}

// For returns the client that acts as cred, creating its pipeline on first use.
func (cs *Clients) For(cred *Credential) (*Client, error) {
	if cred == nil {
		return nil, fmt.Errorf("%w: nil credential", ErrNoCredential)
	}
	key := cred.key()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c, ok := cs.clients[key]; ok {
		return c, nil
	}
	hc, err := cs.httpClient()
	if err != nil {
		return nil, err
	}
	tc, err := cs.tokenCredential(cred, hc)
	if err != nil {
		return nil, fmt.Errorf("credential %s: %w", cred.Source, err)
	}
	co := policy.ClientOptions{
		Cloud:     cs.cloud.azcoreCloud(),
		Transport: hc,
		Retry:     cs.opts.Retry,
		Telemetry: policy.TelemetryOptions{ApplicationID: cs.opts.ApplicationID},
	}
	if !cs.opts.Limits.Disabled {
		co.PerRetryPolicies = []policy.Policy{newLimitPolicy(cs.limits, cred.SubscriptionID)}
	}
	if cs.opts.Metrics != nil {
		co.PerRetryPolicies = withMetrics(co.PerRetryPolicies, cs.opts.Metrics)
	}
	ac, err := arm.NewClient("gitaso/azure", moduleVersion, tc, &arm.ClientOptions{
		ClientOptions:         co,
		DisableRPRegistration: true,
	})
	if err != nil {
		return nil, fmt.Errorf("building ARM pipeline for %s: %w", cred.Source, err)
	}
	ep, err := url.Parse(ac.Endpoint())
	if err != nil {
		return nil, fmt.Errorf("ARM endpoint: %w", err)
	}
	c := &Client{
		pl:       ac.Pipeline(),
		endpoint: ep,
		cred:     cred,
		poll:     cs.opts.PollInterval,
		log:      cs.log.With("credential", cred),
	}
	cs.clients[key] = c
	cs.log.Info("ARM pipeline created", "credential", cred, "endpoint", ep.String())
	return c, nil
}

// Client talks to ARM as one credential. It is safe for concurrent use.
type Client struct {
	pl       runtime.Pipeline
	endpoint *url.URL
	cred     *Credential
	poll     time.Duration
	log      *slog.Logger
	// call is what this client's calls carry (With); the zero value for
	// the client Clients.For caches.
	call CallOptions
}

// Credential returns the credential the client acts as.
func (c *Client) Credential() *Credential { return c.cred }

// requestURL joins an ARM path (an ID, or a collection path) to the endpoint
// and sets api-version.
func (c *Client) requestURL(path, apiVersion string) (string, error) {
	if !strings.HasPrefix(path, "/") {
		return "", fmt.Errorf("ARM path %q must start with /", path)
	}
	if apiVersion == "" {
		return "", fmt.Errorf("ARM path %s: api-version is required", path)
	}
	u := *c.endpoint
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = url.Values{"api-version": {apiVersion}}.Encode()
	return u.String(), nil
}

// send runs one request through the pipeline and returns the response with
// its body read. Transport failures are wrapped with the method and path.
func (c *Client) send(ctx context.Context, method, rawURL string, body []byte) (*http.Response, []byte, error) {
	return c.sendWith(ctx, method, rawURL, body, nil)
}

// sendWith is send with extra request headers.
func (c *Client) sendWith(ctx context.Context, method, rawURL string, body []byte, header http.Header) (*http.Response, []byte, error) {
	req, err := runtime.NewRequest(ctx, method, rawURL)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	req.Raw().Header.Set("Accept", "application/json")
	for k, vs := range header {
		for _, v := range vs {
			req.Raw().Header.Add(k, v)
		}
	}
	if body != nil {
		if err := req.SetBody(streaming.NopCloser(bytes.NewReader(body)), "application/json"); err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", method, req.Raw().URL.Path, err)
		}
	}
	resp, err := c.pl.Do(req)
	if err != nil {
		return nil, nil, c.wrapErr(method, req.Raw().URL.Path, err)
	}
	data, err := runtime.Payload(resp)
	if err != nil {
		return nil, nil, fmt.Errorf("%s %s: reading response: %w", method, req.Raw().URL.Path, err)
	}
	return resp, data, nil
}

// wrapErr turns azcore and azidentity errors into ours: a ResponseError
// becomes an ARMError with ARM's code; anything else keeps its text.
func (c *Client) wrapErr(method, path string, err error) error {
	var re *azcore.ResponseError
	if errors.As(err, &re) && re.RawResponse != nil {
		body, _ := runtime.Payload(re.RawResponse)
		e := newARMError(re.RawResponse, body)
		e.Method, e.Path = method, path
		return e
	}
	return fmt.Errorf("%s %s: %w", method, path, err)
}

// Get reads a resource. A 404 is an *ARMError matching ErrNotFound.
func (c *Client) Get(ctx context.Context, id, apiVersion string) ([]byte, error) {
	u, err := c.requestURL(id, apiVersion)
	if err != nil {
		return nil, err
	}
	resp, body, err := c.send(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, newARMError(resp, body)
	}
	return body, nil
}

// Put creates or replaces a resource and waits for ARM to finish: a
// synchronous 200/201, or a long-running operation (201/202 with
// Azure-AsyncOperation or Location) polled to its end. It returns the
// resource as ARM now has it.
func (c *Client) Put(ctx context.Context, id, apiVersion string, body []byte) ([]byte, error) {
	return c.write(ctx, http.MethodPut, id, apiVersion, body)
}

// Patch updates a resource in place, like Put.
func (c *Client) Patch(ctx context.Context, id, apiVersion string, body []byte) ([]byte, error) {
	return c.write(ctx, http.MethodPatch, id, apiVersion, body)
}

func (c *Client) write(ctx context.Context, method, id, apiVersion string, body []byte) ([]byte, error) {
	u, err := c.requestURL(id, apiVersion)
	if err != nil {
		return nil, err
	}
	if body == nil {
		body = []byte("{}")
	}
	resp, rbody, err := c.send(ctx, method, u, body)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusCreated, http.StatusAccepted:
	default:
		return nil, newARMError(resp, rbody)
	}
	state := provisioningState(rbody)
	async := resp.Header.Get("Azure-AsyncOperation") != ""
	if resp.StatusCode != http.StatusAccepted && (!async || isTerminal(state)) {
		// Synchronous completion. A sync 201 may carry a relative Location header that
		// runtime.NewPoller cannot follow, so NewPoller is not used here at all.
		switch {
		case isFailed(state):
			return nil, c.failedState(method, resp, rbody, state)
		case state == "" || isTerminal(state):
			if hasID(rbody) {
				return rbody, nil
			}
			return c.Get(ctx, id, apiVersion)
		default:
			// 200/201 with a non-terminal provisioningState and no polling header:
			// ARM's "poll the resource" pattern (azcore's body poller).
			resp.Header.Del("Location")
		}
	}
	c.started(pollURL(resp))
	out, err := c.wait(ctx, method, resp, rbody)
	if err != nil {
		return nil, err
	}
	if hasID(out) {
		return out, nil
	}
	return c.Get(ctx, id, apiVersion)
}

// Delete deletes a resource and waits until ARM has: 200/204 at once, or a
// 202 whose Location (or Azure-AsyncOperation) is polled to the end. A 404,
// at once or while polling, is success.
func (c *Client) Delete(ctx context.Context, id, apiVersion string) error {
	return c.DeleteWith(ctx, id, apiVersion, nil, nil)
}

// DeleteWith is Delete with extra query parameters (besides api-version) and
// request headers, e.g. apimanagement's deleteSubscriptions=true and
// If-Match: *.
func (c *Client) DeleteWith(ctx context.Context, id, apiVersion string, query url.Values, header http.Header) error {
	u, err := c.requestURL(id, apiVersion)
	if err != nil {
		return err
	}
	if len(query) > 0 {
		pu, err := url.Parse(u)
		if err != nil {
			return err
		}
		q := pu.Query()
		for k, vs := range query {
			for _, v := range vs {
				q.Add(k, v)
			}
		}
		pu.RawQuery = q.Encode()
		u = pu.String()
	}
	resp, body, err := c.sendWith(ctx, http.MethodDelete, u, nil, header)
	if err != nil {
		return err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent, http.StatusNotFound:
		return nil
	case http.StatusAccepted, http.StatusCreated:
	default:
		return newARMError(resp, body)
	}
	if resp.Header.Get("Location") == "" && resp.Header.Get("Azure-AsyncOperation") == "" {
		return nil // accepted with nothing to poll: ARM will finish on its own
	}
	c.started(pollURL(resp))
	_, err = c.wait(ctx, http.MethodDelete, resp, body)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}

// Post invokes an action (e.g. listKeys) and returns its result, waiting for
// a long-running action to finish.
func (c *Client) Post(ctx context.Context, path, apiVersion string, body []byte) ([]byte, error) {
	u, err := c.requestURL(path, apiVersion)
	if err != nil {
		return nil, err
	}
	if body == nil {
		body = []byte("{}")
	}
	resp, rbody, err := c.send(ctx, http.MethodPost, u, body)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
		return rbody, nil
	case http.StatusCreated, http.StatusAccepted:
		if resp.Header.Get("Location") == "" && resp.Header.Get("Azure-AsyncOperation") == "" {
			return rbody, nil
		}
		return c.wait(ctx, http.MethodPost, resp, rbody)
	default:
		return nil, newARMError(resp, rbody)
	}
}

// List reads every item of a collection, following nextLink.
func (c *Client) List(ctx context.Context, collectionPath, apiVersion string) ([]json.RawMessage, error) {
	u, err := c.requestURL(collectionPath, apiVersion)
	if err != nil {
		return nil, err
	}
	var out []json.RawMessage
	for page := 0; u != ""; page++ {
		if page > 100000 {
			return nil, fmt.Errorf("listing %s: too many pages", collectionPath)
		}
		resp, body, err := c.send(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, newARMError(resp, body)
		}
		var p struct {
			Value    []json.RawMessage `json:"value"`
			NextLink string            `json:"nextLink"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return nil, fmt.Errorf("listing %s: decoding page: %w", collectionPath, err)
		}
		out = append(out, p.Value...)
		u = p.NextLink
	}
	return out, nil
}

// wait polls a long-running operation started by resp to its end with
// runtime.NewPoller, sleeping Retry-After (or the poll interval) between
// polls, and returns the final body (nil for operations without one).
func (c *Client) wait(ctx context.Context, method string, resp *http.Response, body []byte) ([]byte, error) {
	path := resp.Request.URL.Path
	resolvePollHeaders(resp)
	p, err := runtime.NewPoller[json.RawMessage](resp, c.pl, nil)
	if err != nil {
		return nil, c.wrapErr(method, path, err)
	}
	start := time.Now()
	polls := 0
	defer func() {
		c.log.Debug("long-running operation finished", "method", method, "path", path, "polls", polls, "elapsed", time.Since(start))
	}()
	last := resp
	for !p.Done() {
		d := retryAfter(last)
		if d <= 0 {
			d = c.poll
		}
		if err := c.sleep(ctx, d); err != nil {
			return nil, fmt.Errorf("%s %s: waiting for the operation: %w", method, path, err)
		}
		polls++
		r, err := p.Poll(ctx)
		if err != nil {
			return nil, c.wrapErr(method, path, err)
		}
		last = r
	}
	res, err := p.Result(ctx)
	if err != nil {
		return nil, c.wrapErr(method, path, err)
	}
	return res, nil
}

// failedState reports a synchronous answer whose provisioningState is Failed
// or Canceled, with the body's error when it carries one.
func (c *Client) failedState(method string, resp *http.Response, body []byte, state string) error {
	e := &ARMError{StatusCode: resp.StatusCode, Method: method, Path: resp.Request.URL.Path,
		RequestID: resp.Header.Get("x-ms-request-id")}
	var b struct {
		Error      *armErrorInner `json:"error"`
		Properties struct {
			Error *armErrorInner `json:"error"`
		} `json:"properties"`
	}
	_ = json.Unmarshal(body, &b)
	inner := b.Error
	if inner == nil {
		inner = b.Properties.Error
	}
	if inner != nil && inner.Code != "" {
		e.Code, e.Message = inner.Code, inner.Message
	} else {
		e.Code = "ResourceProvisioning" + state
		e.Message = "ARM answered with provisioningState " + state
	}
	e.Retryable = aso.ClassifyCode(e.Code) == aso.Retryable
	return e
}

func provisioningState(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	var v struct {
		Properties struct {
			ProvisioningState string `json:"provisioningState"`
		} `json:"properties"`
	}
	if json.Unmarshal(body, &v) != nil {
		return ""
	}
	return v.Properties.ProvisioningState
}

func hasID(body []byte) bool {
	if len(body) == 0 {
		return false
	}
	var v struct {
		ID string `json:"id"`
	}
	return json.Unmarshal(body, &v) == nil && v.ID != ""
}

func isTerminal(s string) bool {
	return strings.EqualFold(s, "Succeeded") || isFailed(s)
}

func isFailed(s string) bool {
	return strings.EqualFold(s, "Failed") || strings.EqualFold(s, "Canceled") || strings.EqualFold(s, "Cancelled")
}

func isCertificateError(err error) bool {
	var ua x509.UnknownAuthorityError
	var ci x509.CertificateInvalidError
	var hn x509.HostnameError
	var cv *tls.CertificateVerificationError
	return errors.As(err, &ua) || errors.As(err, &ci) || errors.As(err, &hn) || errors.As(err, &cv)
}
