package emulator

import (
	"fmt"
	"net/http"
	"strings"
)

// Changes made outside gitaso (someone in the portal, a script): tests inject drift through these, and the
// Activity Log records them with their caller (AdminCaller when none is given), as Azure records any write.

// WriteOutOfBand creates or replaces the resource id with body as a write outside gitaso would: through the
// emulator's ARM handling (validation, defaults, long-running operations), recorded in the Activity Log with
// caller. apiVersion "" uses the type's most used api-version in the table of recorded answers.
func (e *Emulator) WriteOutOfBand(id string, body map[string]any, caller, apiVersion string) error {
	p := parseARMPath(id)
	if p.Kind != pathResource || p.Sub == "" {
		return fmt.Errorf("emulator: write out of band: %q is not the ID of a resource in a subscription", id)
	}
	if apiVersion == "" {
		apiVersion = "2021-04-01"
		if t := armTable[strings.ToLower(p.Type)]; t != nil && len(t.APIVersions) > 0 {
			apiVersion = t.APIVersions[0]
		}
	}
	if _, _, _, aerr := e.put(p, deepCopyJSON(body), false, apiVersion); aerr != nil {
		return fmt.Errorf("emulator: write out of band %s: %s: %s", id, aerr.Code, aerr.Message)
	}
	e.recordAdminWrite(p.ID, "write", caller)
	return nil
}

// DeleteOutOfBand removes the resource id (and what it contains) at once, as a delete outside gitaso would,
// recorded in the Activity Log with caller. It fails when the resource does not exist.
func (e *Emulator) DeleteOutOfBand(id, caller string) error {
	p := parseARMPath(id)
	if p.Kind != pathResource || p.Sub == "" {
		return fmt.Errorf("emulator: delete out of band: %q is not the ID of a resource in a subscription", id)
	}
	key := strings.ToLower(p.ID)
	e.mu.Lock()
	res := e.store.get(key)
	if res != nil {
		p.ID = res.ID
		e.removeResource(key)
		e.markDirty()
	}
	e.mu.Unlock()
	if res == nil {
		return fmt.Errorf("emulator: delete out of band: no resource %s", id)
	}
	e.recordAdminWrite(p.ID, "delete", caller)
	return nil
}

// serveAdminOutOfBand is PUT /_admin/resource {"id","body","caller","apiVersion"} (WriteOutOfBand) and
// DELETE /_admin/resource?id=…&caller=… (DeleteOutOfBand).
func (e *Emulator) serveAdminOutOfBand(w http.ResponseWriter, r *http.Request, decode func(any) bool) {
	if r.Method == http.MethodDelete {
		q := r.URL.Query()
		if err := e.DeleteOutOfBand(q.Get("id"), q.Get("caller")); err != nil {
			writeARMError(w, http.StatusNotFound, "ResourceNotFound", err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	var in struct {
		ID         string         `json:"id"`
		Body       map[string]any `json:"body"`
		Caller     string         `json:"caller"`
		APIVersion string         `json:"apiVersion"`
	}
	if !decode(&in) {
		return
	}
	if in.Body == nil {
		writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", "body: the resource's JSON body is required")
		return
	}
	if err := e.WriteOutOfBand(in.ID, in.Body, in.Caller, in.APIVersion); err != nil {
		writeARMError(w, http.StatusBadRequest, "BadRequest", err.Error())
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
