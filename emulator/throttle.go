package emulator

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// bucketSpec is a token bucket: capacity tokens, refilled at refill tokens per second.
type bucketSpec struct {
	capacity float64
	refill   float64
}

// ARM's limits per subscription, principal and operation type (reads, writes, deletes).
var armBuckets = [3]bucketSpec{
	classRead:   {capacity: 250, refill: 25},
	classWrite:  {capacity: 200, refill: 10},
	classDelete: {capacity: 200, refill: 10},
}

var (
	classNames   = [3]string{"reads", "writes", "deletes"}
	classVerbs   = [3]string{"read", "write", "delete"}
	remainingHdr = [3]string{"x-ms-ratelimit-remaining-subscription-reads", "x-ms-ratelimit-remaining-subscription-writes", "x-ms-ratelimit-remaining-subscription-deletes"}
	tenantHdr    = [3]string{"x-ms-ratelimit-remaining-tenant-reads", "x-ms-ratelimit-remaining-tenant-writes", "x-ms-ratelimit-remaining-tenant-deletes"}
)

type bucket struct {
	tokens float64
	last   time.Time
}

// throttler implements ARM's token buckets.
type throttler struct {
	mu      sync.Mutex
	scale   float64
	specs   [3]bucketSpec
	buckets map[string]*bucket
}

func newThrottler(scale float64) *throttler {
	t := &throttler{buckets: map[string]*bucket{}}
	t.setScale(scale)
	return t
}

func (t *throttler) setScale(scale float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.scale = scale
	for i, s := range armBuckets {
		t.specs[i] = bucketSpec{capacity: s.capacity * scale, refill: s.refill * scale}
	}
	t.buckets = map[string]*bucket{}
}

// take consumes one token. It returns the tokens remaining, or how long until a token is available.
func (t *throttler) take(key string, class int, now time.Time) (remaining int, wait time.Duration, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	spec := t.specs[class]
	k := key + "|" + classNames[class]
	b := t.buckets[k]
	if b == nil {
		b = &bucket{tokens: spec.capacity, last: now}
		t.buckets[k] = b
	}
	b.tokens = math.Min(spec.capacity, b.tokens+now.Sub(b.last).Seconds()*spec.refill)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return int(b.tokens), 0, true
	}
	need := (1 - b.tokens) / spec.refill
	return 0, time.Duration(need * float64(time.Second)), false
}

// allow applies throttling to an ARM request, writing the remaining-quota header or a 429.
func (t *throttler) allow(w http.ResponseWriter, sub, principal string, class int, info *reqInfo) bool {
	t.mu.Lock()
	off := t.scale <= 0
	t.mu.Unlock()
	hdr := remainingHdr
	scopeKey := sub
	if sub == "" {
		hdr, scopeKey = tenantHdr, "tenant"
	}
	if off {
		return true
	}
	remaining, wait, ok := t.take(scopeKey+"|"+principal, class, time.Now())
	if ok {
		w.Header().Set(hdr[class], strconv.Itoa(remaining))
		return true
	}
	secs := int(math.Ceil(wait.Seconds()))
	if secs < 1 {
		secs = 1
	}
	info.code = "SubscriptionRequestsThrottled"
	w.Header().Set(hdr[class], "0")
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	w.Header().Set("retry-after-ms", strconv.FormatInt(max(wait.Milliseconds(), 1), 10))
	target := "subscription '" + sub + "'"
	if sub == "" {
		target = "tenant"
	}
	writeARMError(w, http.StatusTooManyRequests, info.code, fmt.Sprintf(
		"Number of '%s' requests for %s actor '%s' exceeded. Please try again after '%d' seconds after additional tokens are available. Refer to https://aka.ms/arm-throttling",
		classVerbs[class], target, principal, secs))
	return false
}

// SetThrottleScale changes the throttling scale at run time (0 disables) and refills every bucket.
func (e *Emulator) SetThrottleScale(f float64) { e.throttle.setScale(f) }
