package azure

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gitaso/gitaso/aso"
)

// ErrNotFound is returned (as an *ARMError that matches it with errors.Is)
// when ARM answers 404: the resource, or its resource group, does not exist.
var ErrNotFound = errors.New("not found")

// ARMError is a failure reported by Azure Resource Manager: an error status
// or a failed long-running operation. Code and Message are ARM's own (e.g.
// AuthorizationFailed); when the body carries no code the HTTP status text
// stands in. Retryable follows ASO's generic classification (aso.ClassifyCode:
// codes that no retry can fix are fatal, everything else is retried). RetryAfter is the server's hint.
// StatusCode is the HTTP status of the response that carried the error: for a
// long-running operation that ended Failed it is the status of the operation
// resource (usually 200), and Code/Message come from its "error".
type ARMError struct {
	StatusCode int
	Code       string
	Message    string
	Retryable  bool
	RetryAfter time.Duration

	Method    string // request that failed (the initial request for an LRO)
	Path      string // URL path, without query
	RequestID string // x-ms-request-id, for support tickets
	// Details are ARM's nested errors (error.details), most useful first.
	Details []ARMErrorDetail
}

// ARMErrorDetail is one entry of an ARM error's details.
type ARMErrorDetail struct {
	Code, Message, Target string
}

func (e *ARMError) Error() string {
	var b strings.Builder
	if e.Method != "" {
		b.WriteString(e.Method)
		b.WriteByte(' ')
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	fmt.Fprintf(&b, "%d %s: %s", e.StatusCode, e.Code, e.Message)
	for _, d := range e.Details {
		fmt.Fprintf(&b, "; %s: %s", d.Code, d.Message)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrNotFound) true for 404s.
func (e *ARMError) Is(target error) bool {
	return target == ErrNotFound && e.StatusCode == http.StatusNotFound
}

// HTTPStatusCode is the HTTP status that carried the error (aso.ResponseError).
func (e *ARMError) HTTPStatusCode() int { return e.StatusCode }

// armErrorBody covers ARM's shapes: {"error":{...}}, a bare {"code","message"},
// and an operation-status resource {"status":"Failed","error":{...}}.
type armErrorBody struct {
	Error *armErrorInner `json:"error"`
	armErrorInner
}

type armErrorInner struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Target  string          `json:"target"`
	Details []armErrorInner `json:"details"`
}

// newARMError builds an ARMError from a response (body already read into body).
func newARMError(resp *http.Response, body []byte) *ARMError {
	e := &ARMError{StatusCode: resp.StatusCode}
	if resp.Request != nil {
		e.Method = resp.Request.Method
		e.Path = resp.Request.URL.Path
	}
	e.RequestID = resp.Header.Get("x-ms-request-id")
	e.RetryAfter = retryAfter(resp)
	var b armErrorBody
	if len(body) > 0 && json.Unmarshal(body, &b) == nil {
		inner := b.Error
		if inner == nil {
			inner = &b.armErrorInner
		}
		e.Code, e.Message = inner.Code, inner.Message
		for _, d := range inner.Details {
			e.Details = append(e.Details, ARMErrorDetail{Code: d.Code, Message: d.Message, Target: d.Target})
		}
	}
	if e.Code == "" {
		e.Code = strings.ReplaceAll(http.StatusText(resp.StatusCode), " ", "")
		if e.Code == "" {
			e.Code = "HTTP" + strconv.Itoa(resp.StatusCode)
		}
	}
	if e.Message == "" {
		msg := strings.TrimSpace(string(body))
		if len(msg) > 512 {
			msg = msg[:512] + "…"
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		e.Message = msg
	}
	e.Retryable = aso.ClassifyCode(e.Code) == aso.Retryable
	return e
}

// retryAfter reads retry-after-ms, x-ms-retry-after-ms and Retry-After
// (seconds or an HTTP date), as azcore does.
func retryAfter(resp *http.Response) time.Duration {
	if resp == nil {
		return 0
	}
	for _, h := range []string{"retry-after-ms", "x-ms-retry-after-ms"} {
		if v := resp.Header.Get(h); v != "" {
			if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
				return time.Duration(ms * float64(time.Millisecond))
			}
		}
	}
	v := resp.Header.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}
