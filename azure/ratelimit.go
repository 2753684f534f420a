package azure

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"golang.org/x/time/rate"
)

// Limit is one token bucket: Burst requests at once, refilled at PerSecond.
type Limit struct {
	Burst     int
	PerSecond float64
}

// RateLimits sizes the client-side buckets kept per subscription, one per ARM
// operation class: reads (GET, HEAD), writes (PUT, PATCH, POST) and deletes.
// ARM's own buckets hold 250 reads refilling 25/s and 200 writes and 200
// deletes refilling 10/s. The defaults are ARM's own sizes: every answer's
// x-ms-ratelimit-remaining-subscription-* header drains the client's bucket
// down to what ARM says remains (and a 429 empties it), so gitaso does the
// waiting without giving up ARM's rate. Buckets kept 5% under ARM's made a
// first apply 5% slower than ARM allows (issue 12).
type RateLimits struct {
	Reads, Writes, Deletes Limit
	Disabled               bool
}

// DefaultRateLimits returns buckets of ARM's sizes.
func DefaultRateLimits() RateLimits {
	return RateLimits{
		Reads:   Limit{Burst: 250, PerSecond: 25},
		Writes:  Limit{Burst: 200, PerSecond: 10},
		Deletes: Limit{Burst: 200, PerSecond: 10},
	}
}

type opClass int

const (
	opRead opClass = iota
	opWrite
	opDelete
)

var remainingHeaders = [...]string{
	opRead:   "x-ms-ratelimit-remaining-subscription-reads",
	opWrite:  "x-ms-ratelimit-remaining-subscription-writes",
	opDelete: "x-ms-ratelimit-remaining-subscription-deletes",
}

func classOf(method string) opClass {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return opRead
	case http.MethodDelete:
		return opDelete
	default:
		return opWrite
	}
}

// subLimiter holds one subscription's buckets.
type subLimiter struct {
	buckets [3]*rate.Limiter
}

func newSubLimiter(l RateLimits) *subLimiter {
	mk := func(x Limit) *rate.Limiter {
		if x.PerSecond <= 0 {
			return rate.NewLimiter(rate.Inf, 0)
		}
		b := x.Burst
		if b < 1 {
			b = 1
		}
		return rate.NewLimiter(rate.Limit(x.PerSecond), b)
	}
	return &subLimiter{buckets: [3]*rate.Limiter{mk(l.Reads), mk(l.Writes), mk(l.Deletes)}}
}

// observe drains a bucket down to what ARM says remains, and empties it on a
// 429, so that concurrent callers wait for the refill instead of collecting 429s.
func (s *subLimiter) observe(class opClass, resp *http.Response) {
	lim := s.buckets[class]
	if lim.Limit() == rate.Inf {
		return
	}
	now := time.Now()
	have := lim.TokensAt(now)
	target := have
	if resp.StatusCode == http.StatusTooManyRequests {
		target = 0
	} else if v := resp.Header.Get(remainingHeaders[class]); v != "" {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && float64(n) < target {
			target = float64(n)
		}
	}
	if drain := int(have - target); drain > 0 {
		lim.AllowN(now, drain)
	}
}

// limiters is the per-subscription registry shared by all pipelines of a Clients.
type limiters struct {
	limits RateLimits
	mu     sync.Mutex
	subs   map[string]*subLimiter
}

func (l *limiters) get(sub string) *subLimiter {
	sub = strings.ToLower(sub)
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.subs[sub]
	if !ok {
		if l.subs == nil {
			l.subs = map[string]*subLimiter{}
		}
		s = newSubLimiter(l.limits)
		l.subs[sub] = s
	}
	return s
}

// subscriptionOf returns the subscription ID in an ARM URL path, or "".
func subscriptionOf(path string) string {
	const p = "/subscriptions/"
	if len(path) < len(p) || !strings.EqualFold(path[:len(p)], p) {
		return ""
	}
	rest := path[len(p):]
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// limitPolicy waits for a token of the request's subscription and class
// before each try (retries included: ARM counts them too).
type limitPolicy struct {
	l          *limiters
	defaultSub string
	def        *subLimiter // the credential's own subscription, looked up once
}

func newLimitPolicy(l *limiters, defaultSub string) *limitPolicy {
	return &limitPolicy{l: l, defaultSub: defaultSub, def: l.get(defaultSub)}
}

func (p *limitPolicy) Do(req *policy.Request) (*http.Response, error) {
	raw := req.Raw()
	sub := subscriptionOf(raw.URL.Path)
	s := p.def
	if sub == "" {
		sub = p.defaultSub
	} else if !strings.EqualFold(sub, p.defaultSub) {
		s = p.l.get(sub)
	}
	class := classOf(raw.Method)
	if class == opWrite && strings.HasSuffix(strings.ToLower(raw.URL.Path), "/providers/microsoft.resourcegraph/resources") {
		class = opRead // a query reads; it must not spend the write bucket
	}
	if err := s.buckets[class].Wait(raw.Context()); err != nil {
		return nil, fmt.Errorf("waiting for the client-side rate limit of subscription %s: %w", sub, err)
	}
	resp, err := req.Next()
	if err == nil && resp != nil {
		s.observe(class, resp)
	}
	return resp, err
}
