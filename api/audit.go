package api

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// DefaultAuditRetention is how long audit events are kept when
// AuditOptions.Retention is 0.
const DefaultAuditRetention = 90 * 24 * time.Hour

// DefaultAuditLimit and MaxAuditLimit bound ?limit of GET /api/v1/audit.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
)

// tokenUseEvery is how often one token's use is recorded: once a minute,
// not once a request (a CI job polling the API).
const tokenUseEvery = time.Minute

// Auditor records the audit trail: each event in the state (GET
// /api/v1/audit) and in the log as a structured "audit" event at Info, with
// the same fields, for a SIEM that reads the log. A nil *Auditor records
// nothing. Events never hold a secret: the caller is named, a token by its
// name, and nothing of a request's headers is kept.
type Auditor struct {
	db        *state.DB
	log       *slog.Logger
	retention time.Duration
	now       func() time.Time

	mu        sync.Mutex
	tokenSeen map[string]time.Time
	readSeen  map[string]time.Time // refused reads recorded in the last minute
}

// NewAuditor returns an auditor writing to db and log, keeping events for
// retention (DefaultAuditRetention when 0).
func NewAuditor(db *state.DB, log *slog.Logger, retention time.Duration) *Auditor {
	if retention <= 0 {
		retention = DefaultAuditRetention
	}
	if log == nil {
		log = slog.Default()
	}
	return &Auditor{db: db, log: log, retention: retention, now: time.Now, tokenSeen: map[string]time.Time{}, readSeen: map[string]time.Time{}}
}

// Record fills the event's caller from ctx's identity (unless set) and its
// time (unless set), then writes it. A failure to write is logged: the
// action it records is not undone.
func (a *Auditor) Record(ctx context.Context, ev record.AuditEvent) {
	if a == nil {
		return
	}
	if ev.Who == "" {
		id := access.IdentityFrom(ctx)
		ev.Who, ev.Kind, ev.Subject, ev.Groups, ev.Issuer = id.String(), string(id.Kind), id.Subject, id.Groups, id.Issuer
	}
	if ev.At.IsZero() {
		ev.At = a.now().UTC()
	}
	if a.db != nil {
		if err := a.db.AppendAudit(&ev); err != nil {
			a.log.ErrorContext(ctx, "audit event not stored", "action", ev.Action, "who", ev.Who, "error", err)
		}
	}
	attrs := []slog.Attr{
		slog.Uint64("id", ev.ID), slog.String("action", ev.Action), slog.String("outcome", ev.Outcome),
		slog.String("who", ev.Who), slog.String("kind", ev.Kind), slog.String("subject", ev.Subject),
		slog.Time("at", ev.At),
	}
	add := func(k, v string) {
		if v != "" {
			attrs = append(attrs, slog.String(k, v))
		}
	}
	add("issuer", ev.Issuer)
	add("from", ev.From)
	add("right", ev.Right)
	add("revision", ev.Revision)
	add("plan", ev.Plan)
	add("detail", ev.Detail)
	if len(ev.Groups) > 0 {
		attrs = append(attrs, slog.Any("groups", ev.Groups))
	}
	if len(ev.Namespaces) > 0 {
		attrs = append(attrs, slog.Any("namespaces", ev.Namespaces))
	}
	a.log.LogAttrs(ctx, slog.LevelInfo, "audit", slog.Attr{Key: "audit", Value: slog.GroupValue(attrs...)})
}

// record records ev for request r: From is r's client address. A refused
// read is recorded once a minute per caller, path and right: a page left
// open polls every few seconds.
func (a *Auditor) record(r *http.Request, ev record.AuditEvent) {
	if a == nil {
		return
	}
	if ev.Action == record.AuditReadDeny && ev.Outcome == record.AuditRefused && !a.firstIn(r, ev) {
		return
	}
	if ev.From == "" {
		ev.From = ClientAddr(r)
	}
	a.Record(r.Context(), ev)
}

// firstIn reports whether a refused read of this caller, right,
// namespaces and request was not recorded within the last minute.
func (a *Auditor) firstIn(r *http.Request, ev record.AuditEvent) bool {
	key := access.IdentityFrom(r.Context()).String() + "\x00" + ev.Right + "\x00" + fmt.Sprint(ev.Namespaces) + "\x00" + ev.Detail
	now := a.now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if last, ok := a.readSeen[key]; ok && now.Sub(last) < tokenUseEvery {
		return false
	}
	if len(a.readSeen) > 10000 {
		for k, t := range a.readSeen {
			if now.Sub(t) >= tokenUseEvery {
				delete(a.readSeen, k)
			}
		}
	}
	a.readSeen[key] = now
	return true
}

// tokenUse records the use of a named token once per tokenUseEvery.
func (a *Auditor) tokenUse(r *http.Request) {
	if a == nil {
		return
	}
	id := access.IdentityFrom(r.Context())
	if id.Kind != access.Token {
		return
	}
	now := a.now()
	a.mu.Lock()
	last, seen := a.tokenSeen[id.Subject]
	fresh := !seen || now.Sub(last) >= tokenUseEvery
	if fresh {
		a.tokenSeen[id.Subject] = now
	}
	a.mu.Unlock()
	if fresh {
		a.record(r, record.AuditEvent{Action: record.AuditToken, Outcome: record.AuditAllowed, Detail: r.Method + " " + r.URL.Path})
	}
}

// Prune drops the events older than the retention; Run calls it hourly.
func (a *Auditor) Prune(ctx context.Context) (int, error) {
	if a == nil || a.db == nil {
		return 0, nil
	}
	n, err := a.db.PruneAudit(a.now().Add(-a.retention))
	if err == nil && n > 0 {
		a.log.DebugContext(ctx, "audit events pruned", "events", n, "retention", a.retention)
	}
	return n, err
}

// Run prunes the audit trail now and every hour until ctx ends.
func (a *Auditor) Run(ctx context.Context) {
	if a == nil {
		return
	}
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		if _, err := a.Prune(ctx); err != nil {
			a.log.WarnContext(ctx, "pruning the audit trail", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ClientAddr is where a request came from, for the audit trail: the
// client's IP address and, when a proxy added one, the X-Forwarded-For
// chain it reported ("10.0.0.7 via 127.0.0.1"). The forwarded chain is what
// the client or proxy said, not verified.
func ClientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if xff := r.Header.Get("X-Forwarded-For"); xff != "" {
		if len(xff) > 200 {
			xff = xff[:200]
		}
		return xff + " via " + host
	}
	return host
}

// auditTokens records each named token's use (once a minute) for every
// route it reaches.
func (s *server) auditTokens(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.opts.Audit.tokenUse(r)
		next.ServeHTTP(w, r)
	})
}

// AuditPage is GET /api/v1/audit: events newest first and, when older ones
// remain, the continue token of the next page.
type AuditPage struct {
	Items    []record.AuditEvent `json:"items"`
	Continue string              `json:"continue,omitempty"`
}

// audit is GET /api/v1/audit?limit=N&continue=T; admin on every namespace.
func (s *server) audit(w http.ResponseWriter, r *http.Request) {
	if !s.scope(r, access.Admin).All() {
		s.refuse(w, r, access.Admin, []string{"*"}, record.AuditEvent{})
		return
	}
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"), DefaultAuditLimit, MaxAuditLimit)
	if err != nil {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	var before uint64
	if c := q.Get("continue"); c != "" {
		t, err := decodeToken(c, "audit")
		if err != nil || t.Before == 0 {
			if err == nil {
				err = fmt.Errorf("%w: it is not an audit token", errToken)
			}
			s.writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
			return
		}
		before = t.Before
	}
	events, more, err := s.db.AuditPage(before, limit)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	out := AuditPage{Items: events}
	if out.Items == nil {
		out.Items = []record.AuditEvent{}
	}
	if more {
		out.Continue = encodeToken(pageToken{Before: events[len(events)-1].ID, Filter: "audit"})
	}
	s.writeJSON(w, http.StatusOK, out)
}
