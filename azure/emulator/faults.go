package emulator

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Faults are injected into ARM requests (never into the token or admin endpoints).
type Faults struct {
	Rate429   float64       // probability of a 429 SubscriptionRequestsThrottled (Retry-After: 1)
	Rate500   float64       // probability of a 500 InternalServerError
	Rate503   float64       // probability of a 503 ServiceUnavailable
	ResetRate float64       // probability that the connection is reset without a response
	Latency   time.Duration // added to every ARM request
	// ResetAfterRate is the probability that the request is served in full (a write takes effect, a
	// long-running operation starts) and the connection is then reset before any byte of the response is
	// sent: the client cannot tell whether its request was applied.
	ResetAfterRate float64
	// Methods limits the rate-based faults to these HTTP methods (all when empty).
	Methods []string
	// ProvisioningFailures make long-running operations on matching resources end Failed (or, for types ARM
	// answers synchronously, fail the request with 400).
	ProvisioningFailures []ProvisioningFailure
}

// ProvisioningFailure fails the provisioning of resources whose ID contains Match (case-insensitive).
type ProvisioningFailure struct {
	Match   string `json:"match"`
	Code    string `json:"code,omitempty"`    // default "ResourceOperationFailure"
	Message string `json:"message,omitempty"` // default a generic message
	Count   int    `json:"count,omitempty"`   // fail this many times, then succeed (0: always)
}

type faultInjector struct {
	mu  sync.Mutex
	f   Faults
	rng *rand.Rand
}

func newFaultInjector(f Faults, seed uint64) *faultInjector {
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	return &faultInjector{f: f, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// SetFaults replaces the fault settings.
func (e *Emulator) SetFaults(f Faults) {
	e.faults.mu.Lock()
	e.faults.f = f
	e.faults.mu.Unlock()
}

// CurrentFaults returns the fault settings in force.
func (e *Emulator) CurrentFaults() Faults {
	e.faults.mu.Lock()
	defer e.faults.mu.Unlock()
	f := e.faults.f
	f.ProvisioningFailures = append([]ProvisioningFailure(nil), f.ProvisioningFailures...)
	f.Methods = append([]string(nil), f.Methods...)
	return f
}

// faultAction is what inject decided for a request.
type faultAction int

const (
	faultNone       faultAction = iota // serve the request normally
	faultAnswered                      // inject answered (or aborted) the request: serve nothing
	faultResetAfter                    // serve the request, then reset the connection (see resetAfterServing)
)

// inject applies latency and rate-based faults and says what is left to do with the request.
func (fi *faultInjector) inject(w http.ResponseWriter, r *http.Request, info *reqInfo, poll time.Duration) faultAction {
	fi.mu.Lock()
	f := fi.f
	methodOK := len(f.Methods) == 0
	for _, m := range f.Methods {
		if strings.EqualFold(m, r.Method) {
			methodOK = true
		}
	}
	var roll float64
	if methodOK && (f.Rate429+f.Rate500+f.Rate503+f.ResetRate+f.ResetAfterRate) > 0 {
		roll = fi.rng.Float64()
	} else {
		roll = 2
	}
	fi.mu.Unlock()
	if f.Latency > 0 {
		select {
		case <-time.After(f.Latency):
		case <-r.Context().Done():
			return faultAnswered
		}
	}
	switch {
	case roll < f.ResetRate:
		info.fault = "reset"
		panic(http.ErrAbortHandler)
	case roll < f.ResetRate+f.Rate429:
		info.fault, info.code = "429", "SubscriptionRequestsThrottled"
		w.Header().Set("Retry-After", "1")
		w.Header().Set("retry-after-ms", strconv.FormatInt(max(poll.Milliseconds(), 1), 10))
		writeARMError(w, http.StatusTooManyRequests, info.code, "Number of requests exceeded the limit (injected fault). Please try again after '1' seconds. Refer to https://aka.ms/arm-throttling")
		return faultAnswered
	case roll < f.ResetRate+f.Rate429+f.Rate500:
		info.fault, info.code = "500", "InternalServerError"
		writeARMError(w, http.StatusInternalServerError, info.code, "Encountered internal server error. (injected fault)")
		return faultAnswered
	case roll < f.ResetRate+f.Rate429+f.Rate500+f.Rate503:
		info.fault, info.code = "503", "ServiceUnavailable"
		w.Header().Set("Retry-After", "1")
		writeARMError(w, http.StatusServiceUnavailable, info.code, "The service is temporarily unavailable. Please try again later. (injected fault)")
		return faultAnswered
	case roll < f.ResetRate+f.Rate429+f.Rate500+f.Rate503+f.ResetAfterRate:
		info.fault = "reset-after"
		return faultResetAfter
	}
	return faultNone
}

// discardWriter swallows a response that is never sent (faultResetAfter).
type discardWriter struct{ header http.Header }

func (d *discardWriter) Header() http.Header         { return d.header }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// resetAfterServing is deferred by a request served with faultResetAfter: once the handler has run (against a
// discardWriter) it aborts the connection, so the client sees a reset and no response. A panic of the handler
// itself is passed on.
func resetAfterServing() {
	if v := recover(); v != nil {
		panic(v)
	}
	panic(http.ErrAbortHandler)
}

// provisioningFailure returns the failure configured for a resource ID, consuming one count.
func (fi *faultInjector) provisioningFailure(id string) *ProvisioningFailure {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	lid := strings.ToLower(id)
	for i := range fi.f.ProvisioningFailures {
		pf := &fi.f.ProvisioningFailures[i]
		if pf.Match != "*" && !strings.Contains(lid, strings.ToLower(pf.Match)) {
			continue
		}
		if pf.Count < 0 {
			continue
		}
		out := *pf
		if pf.Count > 0 {
			pf.Count--
			if pf.Count == 0 {
				pf.Count = -1
			}
		}
		if out.Code == "" {
			out.Code = "ResourceOperationFailure"
		}
		if out.Message == "" {
			out.Message = "The resource operation completed with terminal provisioning state 'Failed'. (injected fault)"
		}
		return &out
	}
	return nil
}
