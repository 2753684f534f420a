package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/mux"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// Options configures the handler.
type Options struct {
	// Sync triggers a reconcile and returns without waiting for it. Nil makes
	// POST /api/v1/sync answer 503.
	Sync func(ctx context.Context) error
	// Ready reports whether the daemon is ready (nil error) or why not. Nil
	// means always ready.
	Ready func() error
	// Status reports what the daemon's loop knows of its source's fetches
	// and its state's writes (GET /api/v1/status, and the gitaso_source_*
	// and gitaso_state_write_* metrics). Nil: GET /api/v1/status answers
	// with Ready only.
	Status func() record.Health
	// Logger receives one record per request; nil uses slog.Default().
	Logger *slog.Logger
	// Token, when not empty, is a bearer token named DefaultTokenName
	// ("Authorization: Bearer <Token>", the scheme in any case), as if it
	// were in Tokens (added to it when both are set). Alone (no Tokens, no
	// SignIn) it guards the POSTs only, as it did before sign-in; gitaso
	// serve passes --api-token-file in Tokens.
	Token string
	// Tokens are the named bearer tokens machines authenticate with
	// (tokens.go): each is an identity of kind access.Token. With Tokens or
	// SignIn set, reading the API and /metrics needs a caller too.
	Tokens *Tokens
	// SignIn, when set, signs people in with OpenID Connect (/auth/login,
	// /auth/callback, /auth/logout) and authenticates their browsers by a
	// session cookie (signin.go).
	SignIn *SignIn
	// InsecureNoAuth lets Validate accept a ListenAddr beyond loopback with
	// neither Tokens nor SignIn (e.g. behind a proxy that authenticates).
	InsecureNoAuth bool
	// Approve releases the held deletions of a revision (a full commit SHA
	// or a prefix of at least 7 characters) and triggers a run; it must not
	// wait for the run. Nil makes POST /api/v1/approve answer 503.
	Approve func(ctx context.Context, revision string) error
	// ListenAddr is the address the server listens on, as configured
	// ("127.0.0.1:8080", ":8080", "gitaso.internal:8080"). Its host is
	// accepted in the Host header; an unspecified host (":8080",
	// "0.0.0.0:8080") accepts every IP address. Empty: loopback only.
	ListenAddr string
	// AllowedHosts are further names accepted in the Host header besides
	// loopback addresses, localhost and ListenAddr's host, e.g. the name a
	// reverse proxy forwards: "gitaso.example.com" (any port), ".example.com"
	// (the domain and its subdomains), "*" (no Host check).
	AllowedHosts []string
	// UI, when set, serves every path not matched by the API (the web page).
	UI http.Handler
	// Webhook asks for a fetch of the source now (a push notification);
	// WebhookSecret authenticates the sender. POST /api/v1/webhook answers
	// 503 unless both are set.
	Webhook       func(ctx context.Context) error
	WebhookSecret string
	// Metrics is the registry GET /metrics serves, with the state gauges
	// added (metrics.go); nil: a registry of the API's own.
	Metrics *metrics.Metrics
	// MaxInFlight bounds the GET requests of /api/v1 served at once
	// (DefaultMaxInFlight when 0); beyond, up to MaxQueued (DefaultMaxQueued
	// when 0, none when negative) wait at most QueueWait (DefaultQueueWait
	// when 0) for their turn, and the others are answered 429
	// too_many_requests with Retry-After. Probes, /metrics and the mutating
	// endpoints are not bounded.
	MaxInFlight int
	MaxQueued   int
	QueueWait   time.Duration
	// Policy returns the policy in force (read again when its file
	// changes): the rights per namespace of the caller the authentication
	// put in each request's context (access.IdentityFrom). Nil, or nil
	// returned: access.AllowAll, every right for whoever passed
	// authentication (gitaso before policies).
	Policy func() *access.Policy
	// Audit records the audit trail (sign-ins, syncs, approvals, refusals,
	// token use) and GET /api/v1/audit reads it; nil records nothing.
	Audit *Auditor
	// ApprovePlan, when set, is used by POST /api/v1/approve instead of
	// Approve: it approves the held plan of a revision only when its digest
	// (record.Hold.PlanDigest) is plan, so that an approval never releases
	// deletions the caller did not see (reconcile.ApprovePlan).
	ApprovePlan func(ctx context.Context, revision, plan string) error
}

// DefaultRunsLimit is how many runs GET /api/v1/runs returns without ?limit.
const DefaultRunsLimit = 50

// MaxRunsLimit is the largest ?limit accepted by GET /api/v1/runs.
const MaxRunsLimit = 10000

// Resource is a resource as the API shows it: secret exports by name only,
// never the applied-body hash.
type Resource struct {
	Namespace  string           `json:"namespace"`
	Group      string           `json:"group"`
	Version    string           `json:"version,omitempty"`
	Kind       string           `json:"kind"`
	Name       string           `json:"name"`
	ARMID      string           `json:"armId,omitempty"`
	APIVersion string           `json:"apiVersion,omitempty"`
	File       string           `json:"file,omitempty"`
	Unit       string           `json:"unit,omitempty"` // the Flux unit that rendered it, "Kind/namespace/name"
	Credential string           `json:"credential,omitempty"`
	Policy     string           `json:"policy,omitempty"`
	Generation int64            `json:"generation"`
	Revision   string           `json:"revision,omitempty"`
	UpdatedAt  time.Time        `json:"updatedAt"`
	Ready      record.Condition `json:"ready"`
	// OtherWriter: the newest Activity Log read of the resource showed
	// writes with gitaso's own principal that this gitaso did not make
	// (another gitaso with its own state, or its credential used elsewhere).
	OtherWriter *record.OtherWriter `json:"otherWriter,omitempty"`
	// Outputs are the non-secret exported values, "configmap/key" → value.
	Outputs map[string]string `json:"outputs"`
	// SecretOutputs names the exported secret values, "secret/key"; values
	// are never served.
	SecretOutputs []string `json:"secretOutputs"`
	// AppliedBody (secret values redacted) is only in the single-resource GET.
	AppliedBody json.RawMessage `json:"appliedBody,omitempty"`
	// DependsOn are the keys of the resources this one depends on (owner,
	// references); single-resource GET only.
	DependsOn []string `json:"dependsOn,omitempty"`
	// Runs are the runs that touched the resource, newest first, and
	// LastChange the diff of its last applied change; single-resource GET
	// only.
	Runs       []record.ResourceRun `json:"runs,omitempty"`
	LastChange *Change              `json:"lastChange,omitempty"`
}

// ErrorBody is the shape of every API error: {"error":{"code","message"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is a machine-readable code and a human message.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Held and Current name the held revision an approval asked for and
	// the newer revision that superseded it (code superseded only).
	Held    string `json:"held,omitempty"`
	Current string `json:"current,omitempty"`
	// Right and Namespaces name the right the caller lacks and where (code
	// missing_right only; no namespace: in any namespace, "*": in every
	// namespace).
	Right      string   `json:"right,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
}

// Error codes.
const (
	CodeBadRequest       = "bad_request"
	CodeNotFound         = "not_found"
	CodeAmbiguous        = "ambiguous_kind"
	CodeUnauthorized     = "unauthorized"
	CodeMethodNotAllowed = "method_not_allowed"
	CodeUnavailable      = "unavailable"
	CodeInternal         = "internal"
	// CodeForbidden: a Host the API does not serve (DNS rebinding) or a
	// cross-site request to a mutating endpoint.
	CodeForbidden = "forbidden"
	// CodeUnsupportedMediaType: a mutating endpoint without
	// Content-Type: application/json.
	CodeUnsupportedMediaType = "unsupported_media_type"
	// CodeTooLarge: a request body over the endpoint's limit.
	CodeTooLarge = "request_too_large"
	// CodeConflict: the request cannot apply to the current state (e.g. no
	// held deletions of that revision).
	CodeConflict = "conflict"
	// CodeSuperseded: POST /api/v1/approve of a held revision that a newer
	// revision superseded (409, with held and current in the error).
	CodeSuperseded = "superseded"
	// CodeTooManyRequests: more reads at once than the API serves (429,
	// with Retry-After); see Options.MaxInFlight.
	CodeTooManyRequests = "too_many_requests"
	// CodeStateDamaged: the state file is damaged (503); the message names
	// the damage and the ways out (gitaso state check, a backup, gitaso
	// state rebuild).
	CodeStateDamaged = "state_damaged"
)

type server struct {
	db     *state.DB
	opts   Options
	log    *slog.Logger
	tokens *Tokens // nil: none (auth.go)
	signIn *signIn // nil: no sign-in (signin.go)
	// readGate: reading needs a caller too (Tokens or SignIn set; auth.go).
	readGate bool
	hosts    hostPolicy
	limit    *limiter
	// index holds the resources as the lists show them (index.go); pages,
	// graphs and summaries keep encoded answers (answers.go).
	index                    resourceIndex
	pages, graphs, summaries answerCache
}

// New returns the HTTP handler serving gitaso's API over db. See the package
// documentation for routes and response shapes.
func New(db *state.DB, opts Options) http.Handler {
	_, h := newServer(db, opts)
	return h
}

func newServer(db *state.DB, opts Options) (*server, http.Handler) {
	s := &server{db: db, opts: opts, log: opts.Logger, hosts: newHostPolicy(opts.ListenAddr, opts.AllowedHosts),
		limit: newLimiter(opts.MaxInFlight, opts.MaxQueued, opts.QueueWait)}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.tokens = opts.Tokens
	s.readGate = opts.Tokens != nil || opts.SignIn != nil
	if opts.Token != "" {
		if s.tokens == nil {
			s.tokens, _ = LoadTokens("", s.log)
		}
		if err := s.tokens.AddFixed(DefaultTokenName, opts.Token); err != nil {
			panic("api.New: " + err.Error() + " (Options.Validate finds it)")
		}
	}
	if opts.SignIn != nil {
		var err error
		if s.signIn, err = newSignIn(*opts.SignIn, s.log); err != nil {
			panic("api.New: " + err.Error() + " (Options.Validate finds it)")
		}
		s.signIn.event = s.authEvent
	}
	// Build the resource index now, in the background, so that the first
	// requests do not queue behind it.
	go func() {
		if _, err := s.index.current(db); err != nil {
			s.log.Debug("api: building the resource index (the first request tries again)", "error", err)
		}
	}()
	r := mux.NewRouter()
	// Methods are dispatched by byMethod rather than mux's Methods matcher:
	// in mux v1.8.1 a later non-matching route in a subrouter turns a method
	// mismatch into a 404.
	r.Handle("/healthz", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.healthz, http.MethodHead: s.healthz}))
	r.Handle("/readyz", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.readyz, http.MethodHead: s.readyz}))
	r.Handle("/metrics", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.metricsHandler()}))

	v1 := r.PathPrefix("/api/v1").Subrouter()
	v1.Handle("/resources", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.listResources)}))
	v1.Handle("/resources/{namespace}/{kind}/{name}", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.getResource)}))
	v1.Handle("/resources/{namespace}/{group}/{kind}/{name}", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.getResource)}))
	v1.Handle("/runs", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.listRuns)}))
	v1.Handle("/runs/{id}", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.getRun)}))
	v1.Handle("/runs/{id}/plan", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.runPlan)}))
	v1.Handle("/units", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.listUnits)}))
	v1.Handle("/units/{kind}/{namespace}/{name}", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.getUnit)}))
	v1.Handle("/graph", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.graph)}))
	v1.Handle("/summary", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.summary)}))
	v1.Handle("/status", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.status)}))
	v1.Handle("/plan", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.plan)}))
	v1.Handle("/sync", s.byMethod(map[string]http.HandlerFunc{http.MethodPost: s.mutating(s.sync)}))
	v1.Handle("/approve", s.byMethod(map[string]http.HandlerFunc{http.MethodPost: s.mutating(s.approve)}))
	v1.Handle("/webhook", s.byMethod(map[string]http.HandlerFunc{http.MethodPost: s.webhook}))
	v1.Handle("/audit", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.bounded(s.audit)}))
	v1.Handle("/whoami", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.whoami}))
	// Sign-in (signin.go, auth.go).
	r.Handle("/auth/login", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.signInRoute(func(w http.ResponseWriter, r *http.Request) { s.signIn.handleLogin(w, r) })}))
	r.Handle("/auth/callback", s.byMethod(map[string]http.HandlerFunc{http.MethodGet: s.signInRoute(func(w http.ResponseWriter, r *http.Request) { s.signIn.handleCallback(w, r) })}))
	r.Handle("/auth/logout", s.byMethod(map[string]http.HandlerFunc{http.MethodPost: s.signInRoute(s.logout)}))
	v1.NotFoundHandler = http.HandlerFunc(s.notFound)

	if opts.UI != nil {
		r.PathPrefix("/").Handler(opts.UI)
	}
	r.NotFoundHandler = http.HandlerFunc(s.notFound)
	return s, s.logRequests(s.recoverPanics(s.checkHost(s.authenticate(s.auditTokens(r)))))
}

func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	writeText(w, http.StatusOK, "ok\n")
}

func (s *server) readyz(w http.ResponseWriter, r *http.Request) {
	if err := s.db.Damaged(); err != nil {
		writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
		return
	}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
			return
		}
	}
	writeText(w, http.StatusOK, "ok\n")
}

func (s *server) getResource(w http.ResponseWriter, r *http.Request) {
	v := mux.Vars(r)
	ns, group, kind, name := v["namespace"], v["group"], v["kind"], v["name"]
	if !s.readsNamespace(w, r, ns) {
		return
	}
	kindFilter := kind
	if group != "" {
		kindFilter = group + "/" + kind
	}
	var found []record.Resource
	if group != "" {
		// The exact key first: one read, not a scan of the kind.
		res, ok, err := s.db.Resource(record.ResourceKey(ns, group, kind, name))
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if ok {
			found = append(found, res)
		}
	}
	if len(found) == 0 {
		rs, err := s.db.Resources(record.Filter{Namespace: ns, Kind: kindFilter})
		if err != nil {
			s.internal(w, r, err)
			return
		}
		for _, res := range rs {
			if res.Name == name {
				found = append(found, res)
			}
		}
	}
	var err error
	switch len(found) {
	case 0:
		s.writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("resource %s/%s/%s not found", ns, kindFilter, name))
	case 1:
		out := view(found[0], true)
		out.DependsOn = found[0].DependsOn
		key := found[0].Key()
		if out.Runs, err = s.db.ResourceRuns(key); err != nil {
			s.internal(w, r, err)
			return
		}
		if c, ok, err := s.db.Change(key); err != nil {
			s.internal(w, r, err)
			return
		} else if ok {
			if out.LastChange, err = changeView(c, found[0].AppliedBody); err != nil {
				s.internal(w, r, fmt.Errorf("diff of %s: %w", key, err))
				return
			}
		}
		s.writeJSON(w, http.StatusOK, out)
	default:
		var kinds []string
		for _, f := range found {
			kinds = append(kinds, f.Group+"/"+f.Kind)
		}
		s.writeError(w, http.StatusConflict, CodeAmbiguous, fmt.Sprintf(
			"kind %q in %s matches %s; ask for /api/v1/resources/%s/<group>/<Kind>/%s", kind, ns, strings.Join(kinds, ", "), ns, name))
	}
}

func view(r record.Resource, withBody bool) Resource {
	out := Resource{
		Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
		ARMID: r.ARMID, APIVersion: r.APIVersion, File: r.File, Unit: r.Unit, Credential: r.Credential, Policy: r.Policy,
		Generation: r.Generation, Revision: r.Revision, UpdatedAt: r.UpdatedAt, Ready: r.Ready,
		Outputs: r.Outputs, SecretOutputs: slices.Clone(r.SecretOutputs), OtherWriter: r.OtherWriter,
	}
	if out.Ready.Type == "" {
		out.Ready = record.Condition{Type: record.ConditionReady, Status: record.StatusUnknown}
	}
	if out.Outputs == nil {
		out.Outputs = map[string]string{}
	}
	if out.SecretOutputs == nil {
		out.SecretOutputs = []string{}
	}
	if withBody {
		out.AppliedBody = r.AppliedBody
	}
	return out
}

func (s *server) plan(w http.ResponseWriter, r *http.Request) {
	// The state keeps the plan compressed: it is sent as stored to a client
	// that accepts gzip and decompressed as it is written for the others,
	// with no copy kept (16 MB of JSON at 10,000 resources, plus a
	// compressed copy, rebuilt on every state commit of a run).
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	b, gzipped, err := s.db.PlanStored()
	s.sendPlan(sc, w, r, b, gzipped, err, "no plan yet: the first reconcile has not finished planning")
}

// runPlan is GET /api/v1/runs/{id}/plan: the plan of an earlier phase of the
// latest run that applied in phases (the latest phase's plan is
// GET /api/v1/plan). The plans of other runs are not kept.
func (s *server) runPlan(w http.ResponseWriter, r *http.Request) {
	raw := mux.Vars(r)["id"]
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || id == 0 {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("run id %q: want a positive integer", raw))
		return
	}
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	b, gzipped, err := s.db.PhasePlanStored(id)
	s.sendPlan(sc, w, r, b, gzipped, err, fmt.Sprintf("the plan of run %d is not kept: gitaso keeps the latest plan "+
		"(GET /api/v1/plan) and the plans of the earlier phases of the latest run", id))
}

// sendPlan writes a stored plan (b, gzip compressed when gzipped), or the
// error of reading it, or notFound when none is stored.
func (s *server) sendPlan(sc access.Scope, w http.ResponseWriter, r *http.Request, b []byte, gzipped bool, err error, notFound string) {
	switch {
	case err != nil:
		s.internal(w, r, err)
		return
	case b == nil:
		s.writeError(w, http.StatusNotFound, CodeNotFound, notFound)
		return
	case !sc.All():
		// A caller who reads some namespaces gets the plan cut to them,
		// decoded and encoded again for this answer.
		if gzipped {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err == nil {
				b, err = io.ReadAll(zr)
			}
			if err != nil {
				s.internal(w, r, fmt.Errorf("read the stored plan: %w", err))
				return
			}
		}
		cut, err := planView(b, sc)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		s.writeJSON(w, http.StatusOK, json.RawMessage(cut))
		return
	}
	jsonHeaders(w)
	w.Header().Add("Vary", "Accept-Encoding")
	if !gzipped || acceptsGzip(r) {
		if gzipped {
			w.Header().Set("Content-Encoding", "gzip")
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(http.StatusOK)
		if r.Method != http.MethodHead {
			_, _ = w.Write(b)
		}
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		s.internal(w, r, fmt.Errorf("read the stored plan: %w", err))
		return
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		if _, err := io.Copy(w, zr); err != nil {
			s.log.DebugContext(r.Context(), "writing the plan", "error", err)
		}
	}
}

// sync is POST /api/v1/sync; its body (at most 64 KiB) is not interpreted.
func (s *server) sync(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.readBody(w, r, maxRequestBody); !ok {
		return
	}
	// A run reconciles the whole repository to Git: it changes when things
	// are applied, not what. The right to sync in any namespace asks for one.
	if s.scope(r, access.Sync).None() {
		s.refuse(w, r, access.Sync, nil, record.AuditEvent{Action: record.AuditSync})
		return
	}
	if s.opts.Sync == nil {
		s.writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "sync is not available in this process")
		return
	}
	if err := s.opts.Sync(r.Context()); err != nil {
		s.opts.Audit.record(r, record.AuditEvent{Action: record.AuditSync, Outcome: record.AuditFailed, Detail: err.Error()})
		s.writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "sync not triggered: "+err.Error())
		return
	}
	s.opts.Audit.record(r, record.AuditEvent{Action: record.AuditSync, Outcome: record.AuditAllowed})
	s.writeJSON(w, http.StatusAccepted, struct {
		Status string `json:"status"`
	}{"accepted"})
}

func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, http.StatusNotFound, CodeNotFound, "no route for "+r.URL.Path)
}

// byMethod dispatches on the request method and answers 405 with an Allow
// header for the others.
func (s *server) byMethod(h map[string]http.HandlerFunc) http.Handler {
	allowed := slices.Sorted(maps.Keys(h))
	allow := strings.Join(allowed, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f, ok := h[r.Method]; ok {
			f(w, r)
			return
		}
		w.Header().Set("Allow", allow)
		s.writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, r.Method+" is not allowed on "+r.URL.Path+"; use "+allow)
	})
}

func (s *server) internal(w http.ResponseWriter, r *http.Request, err error) {
	if d := (*state.DamagedError)(nil); errors.As(err, &d) {
		// Not a crash and not gitaso's bug: the operator has to act.
		s.log.ErrorContext(r.Context(), "api request failed: the state file is damaged", "method", r.Method, "path", r.URL.Path, "error", err)
		s.writeError(w, http.StatusServiceUnavailable, CodeStateDamaged, d.Error())
		return
	}
	s.log.ErrorContext(r.Context(), "api request failed", "method", r.Method, "path", r.URL.Path, "error", err)
	s.writeError(w, http.StatusInternalServerError, CodeInternal, "internal error reading state; see the gitaso log")
}

func (s *server) writeError(w http.ResponseWriter, status int, code, msg string) {
	s.writeJSON(w, status, ErrorBody{ErrorDetail{Code: code, Message: msg}})
}

func (s *server) writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		s.log.Error("api: encode response", "error", err)
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"encoding the response failed"}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeText(w http.ResponseWriter, status int, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(s))
}

// statusRecorder captures the status code for the access log.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (rec *statusRecorder) WriteHeader(code int) {
	if rec.status == 0 {
		rec.status = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *statusRecorder) Write(b []byte) (int, error) {
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return rec.ResponseWriter.Write(b)
}

func (rec *statusRecorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }

// logRequests logs method, path, status and duration of every request: at
// Debug (the status page polls, probes and scrapes), the requests that act
// (POST sync, approve, webhook) at Info, and server errors at Warn. Headers
// (and so tokens) are never logged.
func (s *server) logRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		level := slog.LevelDebug
		switch {
		case rec.status >= 500:
			level = slog.LevelWarn
		case r.Method != http.MethodGet && r.Method != http.MethodHead:
			level = slog.LevelInfo
		}
		s.log.LogAttrs(r.Context(), level, "http request",
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.Int("status", rec.status),
			slog.Duration("duration", time.Since(start)))
	})
}

func (s *server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				s.log.ErrorContext(r.Context(), "api handler panicked", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v))
				s.writeError(w, http.StatusInternalServerError, CodeInternal, "internal error; see the gitaso log")
			}
		}()
		next.ServeHTTP(w, r)
	})
}
