package emulator

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/emulator/internal/armtable"
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
	// Answers force how writes of a type are answered: one of the other answers Azure gave (RecordedAnswers),
	// or any answer the emulator can give, instead of the most common one.
	Answers []AnswerOverride
}

// AnswerOverride forces the answer to writes of one ARM type.
type AnswerOverride struct {
	Type   string `json:"type"`            // ARM type, case-insensitive ("Microsoft.Storage/storageAccounts")
	Op     string `json:"op"`              // "create", "update" (a PUT of an existing resource), "patch" or "delete"
	Answer string `json:"answer"`          // "200", "201", "201+A", "201+AL", "202+L", "202+AL", … (204 for deletes)
	Match  string `json:"match,omitempty"` // only resources whose ID contains this (case-insensitive)
	Count  int    `json:"count,omitempty"` // answer so this many times, then as before (0: always)
}

// Validate reports an override the emulator cannot honour, naming it.
func (o AnswerOverride) Validate() error {
	if strings.Count(o.Type, "/") < 1 {
		return fmt.Errorf("answers: type %q is not an ARM type (Namespace/type)", o.Type)
	}
	op, ok := writeOpNames[strings.ToLower(o.Op)]
	if !ok {
		return fmt.Errorf("answers: %s: op %q is not one of create, update, patch, delete", o.Type, o.Op)
	}
	a, err := armtable.Parse(o.Answer)
	if err != nil {
		return fmt.Errorf("answers: %s %s: %w", o.Type, o.Op, err)
	}
	switch {
	case op == writeDelete && a.Status == http.StatusAccepted, op == writeDelete && (a.Status == http.StatusOK || a.Status == http.StatusNoContent) && !a.AsyncOperation && !a.Location:
	case op != writeDelete && (a.Status == http.StatusOK || a.Status == http.StatusCreated || a.Status == http.StatusAccepted):
	default:
		return fmt.Errorf("answers: %s %s: answer %q is not a successful answer to a %s (200, 201 or 202 with +A/+L; a delete: 200, 204 or 202)", o.Type, o.Op, o.Answer, o.Op)
	}
	if o.Count < 0 {
		return fmt.Errorf("answers: %s %s: count %d is negative", o.Type, o.Op, o.Count)
	}
	return nil
}

// Validate reports the first setting the emulator cannot honour.
func (f Faults) Validate() error {
	for _, o := range f.Answers {
		if err := o.Validate(); err != nil {
			return err
		}
	}
	return nil
}

// ProvisioningFailure fails the provisioning of resources whose ID contains Match (case-insensitive).
type ProvisioningFailure struct {
	Match   string `json:"match"`
	Code    string `json:"code,omitempty"`    // default "ResourceOperationFailure"
	Message string `json:"message,omitempty"` // default a generic message
	Count   int    `json:"count,omitempty"`   // fail this many times, then succeed (0: always)
}

// check refuses a share outside [0, 1] or a negative latency.
func (f Faults) check() error {
	for _, r := range []struct {
		name string
		v    float64
	}{{"429", f.Rate429}, {"500", f.Rate500}, {"503", f.Rate503}, {"reset", f.ResetRate}, {"reset-after", f.ResetAfterRate}} {
		if r.v < 0 || r.v > 1 || r.v != r.v {
			return fmt.Errorf("fault %s: share %v is not between 0 and 1", r.name, r.v)
		}
	}
	if f.Latency < 0 {
		return fmt.Errorf("fault latency %s is negative", f.Latency)
	}
	return nil
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

// SetFaults replaces the fault settings. Answers that do not pass Faults.Validate are ignored (the admin API
// refuses them).
func (e *Emulator) SetFaults(f Faults) {
	f.Answers = append([]AnswerOverride(nil), f.Answers...)
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
	f.Answers = append([]AnswerOverride(nil), f.Answers...)
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

// forcedAnswer returns the answer an AnswerOverride forces on a write, consuming one count.
func (fi *faultInjector) forcedAnswer(typeKey, id string, op writeOp) (armtable.Answer, bool) {
	fi.mu.Lock()
	defer fi.mu.Unlock()
	if len(fi.f.Answers) == 0 {
		return armtable.Answer{}, false
	}
	lid := strings.ToLower(id)
	for i := range fi.f.Answers {
		o := &fi.f.Answers[i]
		if o.Count < 0 || !strings.EqualFold(o.Type, typeKey) || writeOpNames[strings.ToLower(o.Op)] != op {
			continue
		}
		if o.Match != "" && !strings.Contains(lid, strings.ToLower(o.Match)) {
			continue
		}
		a, err := armtable.Parse(o.Answer)
		if err != nil || o.Validate() != nil {
			continue
		}
		if o.Count > 0 {
			o.Count--
			if o.Count == 0 {
				o.Count = -1
			}
		}
		return a, true
	}
	return armtable.Answer{}, false
}
