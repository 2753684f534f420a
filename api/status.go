package api

import (
	"net/http"

	"github.com/gitaso/gitaso/record"
)

// health is Options.Status' answer, or one made of Options.Ready alone.
func (s *server) health() record.Health {
	if s.opts.Status != nil {
		return s.opts.Status()
	}
	h := record.Health{Ready: true}
	if s.opts.Ready != nil {
		if err := s.opts.Ready(); err != nil {
			h.Ready, h.Reason = false, err.Error()
		}
	}
	return h
}

// status is GET /api/v1/status: whether the daemon is ready, and what its
// loop knows of its source's fetches and its state's writes
// (record.Health). It always answers 200; "ready" says what /readyz does.
func (s *server) status(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.readable(w, r); !ok {
		return
	}
	s.writeJSON(w, http.StatusOK, s.health())
}
