package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
)

// approveRequest is the body of POST /api/v1/approve.
type approveRequest struct {
	// Revision is the held revision: a full commit SHA or a prefix of at
	// least 7 characters (directory mode: "dir-" and its hex).
	Revision string `json:"revision"`
}

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
	if s.opts.Approve == nil {
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
	if err := s.opts.Approve(r.Context(), rev); err != nil {
		var sup superseded
		if errors.As(err, &sup) {
			held, current := sup.Superseded()
			s.writeJSON(w, http.StatusConflict, ErrorBody{ErrorDetail{Code: CodeSuperseded, Message: err.Error(), Held: held, Current: current}})
			return
		}
		s.writeError(w, http.StatusConflict, CodeConflict, err.Error())
		return
	}
	s.writeJSON(w, http.StatusAccepted, struct {
		Status   string `json:"status"`
		Revision string `json:"revision"`
	}{"accepted", rev})
}
