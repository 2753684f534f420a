package azure

import (
	"net/http"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// RequestMetrics is told about every try of every ARM request a Client sends
// (package metrics implements it, with ASO's ARM client metrics). It must be
// safe for concurrent use and must not block.
type RequestMetrics interface {
	// ObserveARMRequest gets the ARM resource type of the request's path
	// (ASO's label: "Microsoft.Network/virtualNetworks/subnets"), the
	// method, the status code (0 when the try got no response: err says
	// why), how long the try took and which try it was (1 for the first; a
	// larger number is a retry).
	ObserveARMRequest(resourceType, method string, statusCode int, err error, d time.Duration, try int)
}

// RateLimitMetrics, when the RequestMetrics implements it too, is told how
// long each try waited for gitaso's client-side rate limiter (ratelimit.go)
// before it was sent: gitaso throttling itself so that ARM does not.
type RateLimitMetrics interface {
	ObserveRateLimitWait(resourceType, method string, d time.Duration)
}

// UnknownResourceType labels the requests whose path names no ARM resource
// type.
const UnknownResourceType = "unknown"

// withMetrics returns the per-retry policies with m's around them: one
// first, noting when a try reaches the rate limiter, and metricsPolicy last,
// seeing the try once the limiter let it through.
func withMetrics(perRetry []policy.Policy, m RequestMetrics) []policy.Policy {
	out := make([]policy.Policy, 0, len(perRetry)+2)
	out = append(out, limiterEntryPolicy{})
	out = append(out, perRetry...)
	return append(out, metricsPolicy{m})
}

// limiterEntry is when the current try reached the rate limiter; an
// operation value, shared by the tries of a request.
type limiterEntry struct{ at time.Time }

type limiterEntryPolicy struct{}

func (limiterEntryPolicy) Do(req *policy.Request) (*http.Response, error) {
	var e *limiterEntry
	if !req.OperationValue(&e) || e == nil {
		e = &limiterEntry{}
		req.SetOperationValue(e)
	}
	e.at = time.Now()
	return req.Next()
}

// metricsPolicy is a per-retry policy: it sees each try, after the
// client-side rate limiter has let it through, so that the time it records
// is ARM's (ASO's MetricsPolicy is per call, but ASO does not retry inside
// the pipeline: one call is one try there too).
type metricsPolicy struct{ m RequestMetrics }

// tries counts the tries of one request; it is an operation value, which
// azcore shares between the clones the retry policy sends.
type tries struct{ n int }

func (p metricsPolicy) Do(req *policy.Request) (*http.Response, error) {
	var t *tries
	if !req.OperationValue(&t) || t == nil {
		t = &tries{}
		req.SetOperationValue(t)
	}
	t.n++ // the tries of one request are sequential
	raw := req.Raw()
	start := time.Now()
	var e *limiterEntry
	if rl, ok := p.m.(RateLimitMetrics); ok && req.OperationValue(&e) && e != nil && !e.at.IsZero() {
		rl.ObserveRateLimitWait(resourceTypeOf(raw.URL.Path), raw.Method, start.Sub(e.at))
	}
	resp, err := req.Next()
	code := 0
	if err == nil && resp != nil {
		code = resp.StatusCode
	}
	p.m.ObserveARMRequest(resourceTypeOf(raw.URL.Path), raw.Method, code, err, time.Since(start), t.n)
	return resp, err
}

// resourceTypeOf returns the ARM resource type of path as ASO labels it
// (arm.ParseResourceID's ResourceType). ASO records nothing for a path that
// is not a resource ID; gitaso labels a collection (".../resourcegroups",
// ".../providers/Microsoft.ResourceGraph/resources") with the type of its
// members, and anything else UnknownResourceType, so that every request
// counts.
func resourceTypeOf(path string) string {
	if id, err := arm.ParseResourceID(path); err == nil {
		return id.ResourceType.String()
	}
	if id, err := arm.ParseResourceID(path + "/_"); err == nil {
		return id.ResourceType.String()
	}
	return UnknownResourceType
}
