package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
)

// approveRequest is the body of POST /api/v1/approve.
type approveRequest struct {
	// Revision is the held revision: a full commit SHA or a prefix of at
	// least 7 characters (directory mode: "dir-" and its hex).
	Revision string `json:"revision"`
	// Plan, when given, is the digest of the held plan approved
	// (record.Hold.PlanDigest, shown with the hold): a held plan with
	// another digest is not approved (409 plan_changed).
	Plan string `json:"plan,omitempty"`
}

// CodePlanChanged: POST /api/v1/approve named a plan digest that is not the
// held plan's (409).
const CodePlanChanged = "plan_changed"

// superseded is an Approve error saying the held revision is no longer the
// newest (reconcile.SupersededError): 409 superseded, naming both.
type superseded interface {
	error
	Superseded() (held, current string)
}

// minRevisionPrefix is the shortest revision prefix approve accepts (git's
// default abbreviation).
const minRevisionPrefix = 7

// approve is POST /api/v1/approve {"revision":"<sha>"}: it releases the
// deletions the deletion guard held for that revision (exactly those the
// held run listed) and triggers a run. Same rules as sync: Host, same
// origin, Content-Type: application/json, the token when one is set.
func (s *server) approve(w http.ResponseWriter, r *http.Request) {
	body, ok := s.readBody(w, r, maxRequestBody)
	if !ok {
		return
	}
	if s.opts.Approve == nil && s.opts.ApprovePlan == nil {
		s.writeError(w, http.StatusServiceUnavailable, CodeUnavailable, "approving deletions is not available in this process")
		return
	}
	var req approveRequest
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, `want a JSON body {"revision":"<commit SHA or a prefix of at least 7 characters>"}: `+err.Error())
		return
	}
	if dec.More() {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, "want one JSON object, got more after it")
		return
	}
	rev := strings.TrimSpace(req.Revision)
	if len(rev) < minRevisionPrefix {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("revision %q: give the held revision, at least %d characters of it", rev, minRevisionPrefix))
		return
	}
	held, found, ok := s.heldRun(w, r, rev)
	if !ok {
		return
	}
	// The approval releases deletions in every namespace the hold touches
	// (a cascade's parent included): the caller needs approve in each. A
	// revision this API does not find held needs approve everywhere (the
	// approver then says what is wrong with it).
	namespaces := []string{"*"}
	digest := ""
	ev := record.AuditEvent{Action: record.AuditApprove, Revision: rev}
	if found {
		digest = held.Held.PlanDigest(held.Revision)
		ev.Revision, ev.Plan = held.Revision, digest
		if ns := KeysNamespaces(held.Held.Keys); len(ns) > 0 {
			namespaces = ns
		}
	}
	sc := s.scope(r, access.Approve)
	var missing []string
	for _, ns := range namespaces {
		if (ns == "*" && !sc.All()) || (ns != "*" && !sc.Allows(ns)) {
			missing = append(missing, ns)
		}
	}
	if len(missing) > 0 {
		s.refuse(w, r, access.Approve, missing, ev)
		return
	}
	ev.Namespaces = namespaces
	if p := strings.TrimSpace(req.Plan); p != "" && found && p != digest {
		ev.Outcome, ev.Detail = record.AuditFailed, "plan changed: the approval named "+p
		s.opts.Audit.record(r, ev)
		s.writeError(w, http.StatusConflict, CodePlanChanged, fmt.Sprintf(
			"the approval names plan %s, but the plan held for revision %s is %s: look at it again and approve %s", p, held.Revision, digest, digest))
		return
	}
	var err error
	if s.opts.ApprovePlan != nil {
		err = s.opts.ApprovePlan(r.Context(), rev, cmpOr(digest, strings.TrimSpace(req.Plan)))
	} else {
		err = s.opts.Approve(r.Context(), rev)
	}
	if err != nil {
		ev.Outcome, ev.Detail = record.AuditFailed, err.Error()
		s.opts.Audit.record(r, ev)
		var sup superseded
		if errors.As(err, &sup) {
			held, current := sup.Superseded()
			s.writeJSON(w, http.StatusConflict, ErrorBody{ErrorDetail{Code: CodeSuperseded, Message: err.Error(), Held: held, Current: current}})
			return
		}
		s.writeError(w, http.StatusConflict, CodeConflict, err.Error())
		return
	}
	ev.Outcome = record.AuditAllowed
	s.opts.Audit.record(r, ev)
	s.writeJSON(w, http.StatusAccepted, struct {
		Status   string `json:"status"`
		Revision string `json:"revision"`
		Plan     string `json:"plan"`
	}{"accepted", rev, digest})
}

// heldRun finds the newest held run of a revision (a full SHA or a prefix)
// in the state, as the reconciler's approval will. found is false when
// there is none; ok is false when the answer was written (an ambiguous
// prefix: 409, a state error).
func (s *server) heldRun(w http.ResponseWriter, r *http.Request, rev string) (held record.Run, found, ok bool) {
	runs, err := s.db.Runs(0)
	if err != nil {
		s.internal(w, r, err)
		return record.Run{}, false, false
	}
	var h *record.Run
	for i := range runs {
		run := &runs[i]
		if run.Held == nil || !strings.HasPrefix(run.Revision, rev) {
			continue
		}
		if h != nil && h.Revision != run.Revision {
			s.writeError(w, http.StatusConflict, CodeConflict, fmt.Sprintf("revision prefix %q is ambiguous (%s, %s)", rev, h.Revision, run.Revision))
			return record.Run{}, false, false
		}
		if h == nil {
			h = run // newest first
		}
	}
	if h == nil {
		return record.Run{}, false, true
	}
	return *h, true, true
}
