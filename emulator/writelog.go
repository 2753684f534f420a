package emulator

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// maxLoggedBody is the largest request body WithWriteLog passes on (larger bodies are passed on cut short,
// with WriteRecord.Truncated set); ARM itself refuses request bodies above 4 MiB.
const maxLoggedBody = 4 << 20

// WriteRecord is one ARM write request (PUT, PATCH, POST or DELETE under /subscriptions or /providers) as
// WithWriteLog reports it: what the client sent, and the status it got.
type WriteRecord struct {
	Time       time.Time `json:"time"`
	Method     string    `json:"method"`
	Path       string    `json:"path"` // as sent (not lower-cased)
	APIVersion string    `json:"apiVersion,omitempty"`
	Status     int       `json:"status"` // 0: the connection was reset
	// Principal is the object ID of the caller its token names ("" when the request had no valid token), and
	// UserAgent its User-Agent header: who wrote, for a log of two clients sharing one emulator.
	Principal string `json:"principal,omitempty"`
	UserAgent string `json:"userAgent,omitempty"`
	// Body is the request body as received (nil for none). It may hold secrets a client sends (passwords,
	// keys): the log is for tests and the side-by-side harness against an emulator, never for real Azure.
	Body      json.RawMessage `json:"body,omitempty"`
	Truncated bool            `json:"truncated,omitempty"`
}

// WithWriteLog calls fn with every ARM write request once it is answered (including refused, throttled and
// faulted ones), in the goroutine that served it; fn must be safe for concurrent use and quick. It is off by
// default: the request log (RequestLog) keeps no bodies. The side-by-side harness (harness/anchor/cmd/aso-anchor) uses it to
// compare, request by request, what two clients sent for the same manifests.
func WithWriteLog(fn func(WriteRecord)) Option { return func(o *options) { o.writeLog = fn } }

// captureWrite reads the body of an ARM write when a write log is set, replacing r.Body with a copy; it returns
// nil when the request is not logged.
func (e *Emulator) captureWrite(r *http.Request) *WriteRecord {
	if e.opts.writeLog == nil {
		return nil
	}
	switch r.Method {
	case http.MethodPut, http.MethodPatch, http.MethodPost, http.MethodDelete:
	default:
		return nil
	}
	p := strings.ToLower(r.URL.Path)
	if !strings.HasPrefix(p, "/subscriptions") && !strings.HasPrefix(p, "/providers") {
		return nil
	}
	rec := &WriteRecord{Time: time.Now().UTC(), Method: r.Method, Path: r.URL.Path, APIVersion: r.URL.Query().Get("api-version"), UserAgent: r.UserAgent()}
	if r.Body == nil {
		return rec
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxLoggedBody+1))
	rest := r.Body
	if len(body) > maxLoggedBody {
		rec.Truncated = true
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), rest), rest}
		body = body[:maxLoggedBody]
	} else {
		_ = rest.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		if json.Valid(body) {
			rec.Body = json.RawMessage(body)
		} else {
			q, _ := json.Marshal(string(body)) // keep what a client sent even when it is not JSON
			rec.Body = q
		}
	}
	return rec
}

// StoredResource is one resource of the emulator's store, as Resources returns it.
type StoredResource struct {
	ID   string          `json:"id"`
	Type string          `json:"type"`
	Body json.RawMessage `json:"body"` // what GET answers (read-only fields included)
}

// Resources returns every stored resource (tracked, proxy, extension and default children), sorted by
// lower-cased ID, with the body a GET would answer.
func (e *Emulator) Resources() []StoredResource {
	e.mu.RLock()
	out := make([]StoredResource, 0, e.store.len())
	for _, r := range e.store.byKey {
		out = append(out, StoredResource{ID: r.ID, Type: r.Type, Body: append(json.RawMessage(nil), r.body...)})
	}
	e.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return strings.ToLower(out[i].ID) < strings.ToLower(out[j].ID) })
	return out
}
