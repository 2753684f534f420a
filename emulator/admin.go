package emulator

import (
	"crypto/subtle"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// AdminTokenHeader carries the admin token on /_admin requests.
const AdminTokenHeader = "X-Admin-Token"

// faultsWire is the JSON form of Faults on the admin API (latency as a Go duration string, e.g. "250ms").
type faultsWire struct {
	Rate429              float64               `json:"rate429"`
	Rate500              float64               `json:"rate500"`
	Rate503              float64               `json:"rate503"`
	ResetRate            float64               `json:"resetRate"`
	ResetAfterRate       float64               `json:"resetAfterRate"`
	Latency              string                `json:"latency,omitempty"`
	Methods              []string              `json:"methods,omitempty"`
	ProvisioningFailures []ProvisioningFailure `json:"provisioningFailures,omitempty"`
	Answers              []AnswerOverride      `json:"answers,omitempty"`
}

// serveAdmin serves the admin API. It answers only loopback clients that send the admin token (AdminToken()) in
// the X-Admin-Token header:
//
//	GET  /_admin/faults            current faults          PUT /_admin/faults  replace faults (faultsWire JSON)
//	GET  /_admin/stats             Stats                    POST /_admin/reset  clear stats and request log
//	GET  /_admin/requests?limit=N  recent LogEntry list     PUT /_admin/latency {"type":"…","latency":"2s"}
//	PUT  /_admin/throttle          {"scale":0.1}
//	POST /_admin/principals        {"displayName","clientId","objectId","secret","roles":[{"role","scope"}]}
//	POST /_admin/roleassignments   {"principalId","role","scope"}
//	POST /_admin/serviceaccounttoken {"issuer","subject","audiences":[…],"lifetime":"1h"} → {"token","issuer"}
//	GET  /_admin/info              endpoints and IDs
//	PATCH /_admin/resource         {"id","properties":{…}} merged into a stored resource (SetResourceProperties)
//	PUT  /_admin/resource          {"id","body":{…},"caller","apiVersion"} a write outside gitaso (WriteOutOfBand)
//	DELETE /_admin/resource?id=…&caller=…  a delete outside gitaso (DeleteOutOfBand)
//	GET  /_admin/answers?type=T    the table of Azure's answers for type T (RecordedAnswers) and its provenance
//
// Every admin write to a resource shows in the Activity Log (activity.go) with caller AdminCaller unless named.
func (e *Emulator) serveAdmin(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	ip := net.ParseIP(host)
	if err != nil || ip == nil || !ip.IsLoopback() {
		writeARMError(w, http.StatusForbidden, "AdminForbidden", "The admin API is only available from loopback.")
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(AdminTokenHeader)), []byte(e.adminToken)) != 1 {
		writeARMError(w, http.StatusUnauthorized, "AdminUnauthorized", "The admin API requires the "+AdminTokenHeader+" header.")
		return
	}
	decode := func(v any) bool {
		b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err == nil {
			err = json.Unmarshal(b, v)
		}
		if err != nil {
			writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", "invalid JSON: "+err.Error())
			return false
		}
		return true
	}
	route := r.Method + " " + r.URL.Path
	switch route {
	case "GET /_admin/faults":
		f := e.CurrentFaults()
		fw := faultsWire{Rate429: f.Rate429, Rate500: f.Rate500, Rate503: f.Rate503, ResetRate: f.ResetRate, ResetAfterRate: f.ResetAfterRate, Methods: f.Methods, ProvisioningFailures: f.ProvisioningFailures, Answers: f.Answers}
		if f.Latency > 0 {
			fw.Latency = f.Latency.String()
		}
		writeJSON(w, http.StatusOK, fw)
	case "PUT /_admin/faults":
		var fw faultsWire
		if !decode(&fw) {
			return
		}
		f := Faults{Rate429: fw.Rate429, Rate500: fw.Rate500, Rate503: fw.Rate503, ResetRate: fw.ResetRate, ResetAfterRate: fw.ResetAfterRate, Methods: fw.Methods, ProvisioningFailures: fw.ProvisioningFailures, Answers: fw.Answers}
		if err := f.Validate(); err != nil {
			writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", err.Error())
			return
		}
		if fw.Latency != "" {
			d, err := time.ParseDuration(fw.Latency)
			if err != nil {
				writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", "latency: "+err.Error())
				return
			}
			f.Latency = d
		}
		e.SetFaults(f)
		writeJSON(w, http.StatusOK, fw)
	case "PATCH /_admin/resource":
		e.serveAdminResource(w, decode)
	case "PUT /_admin/resource", "DELETE /_admin/resource":
		e.serveAdminOutOfBand(w, r, decode) // drift.go
	case "GET /_admin/answers":
		out := map[string]any{"provenance": AnswerTableProvenance()}
		if typ := r.URL.Query().Get("type"); typ != "" {
			row, ok := RecordedAnswers(typ)
			if !ok {
				writeARMError(w, http.StatusNotFound, "NotFound", "the table of recorded answers does not know type "+typ)
				return
			}
			out["type"] = row
		}
		writeJSON(w, http.StatusOK, out)
	case "GET /_admin/stats":
		writeJSON(w, http.StatusOK, e.Stats())
	case "POST /_admin/reset":
		e.ResetStats()
		w.WriteHeader(http.StatusNoContent)
	case "GET /_admin/requests":
		log := e.RequestLog()
		if n, err := strconv.Atoi(r.URL.Query().Get("limit")); err == nil && n >= 0 && n < len(log) {
			log = log[len(log)-n:]
		}
		writeJSON(w, http.StatusOK, map[string]any{"value": log})
	case "PUT /_admin/latency":
		var in struct {
			Type    string `json:"type"`
			Latency string `json:"latency"`
		}
		if !decode(&in) {
			return
		}
		d, err := time.ParseDuration(in.Latency)
		if err != nil {
			writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", "latency: "+err.Error())
			return
		}
		e.SetLatency(in.Type, d)
		w.WriteHeader(http.StatusNoContent)
	case "PUT /_admin/throttle":
		var in struct {
			Scale float64 `json:"scale"`
		}
		if !decode(&in) {
			return
		}
		e.SetThrottleScale(in.Scale)
		w.WriteHeader(http.StatusNoContent)
	case "POST /_admin/principals":
		var in struct {
			ServicePrincipal
			Roles []RoleGrant `json:"roles"`
		}
		if !decode(&in) {
			return
		}
		sp, err := e.AddPrincipal(PrincipalSpec{ServicePrincipal: in.ServicePrincipal, Roles: in.Roles})
		if err != nil {
			writeARMError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		writeJSON(w, http.StatusCreated, sp)
	case "POST /_admin/roleassignments":
		var in struct {
			PrincipalID string `json:"principalId"`
			Role        string `json:"role"`
			Scope       string `json:"scope"`
		}
		if !decode(&in) {
			return
		}
		if err := e.AssignRole(in.PrincipalID, in.Role, in.Scope); err != nil {
			writeARMError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case "POST /_admin/serviceaccounttoken":
		var in struct {
			Issuer    string   `json:"issuer"`
			Subject   string   `json:"subject"`
			Audiences []string `json:"audiences"`
			Lifetime  string   `json:"lifetime"`
		}
		if !decode(&in) {
			return
		}
		life := time.Hour
		if in.Lifetime != "" {
			d, err := time.ParseDuration(in.Lifetime)
			if err != nil {
				writeARMError(w, http.StatusBadRequest, "InvalidRequestContent", "lifetime: "+err.Error())
				return
			}
			life = d
		}
		tok, err := e.issueSAToken(in.Issuer, in.Subject, in.Audiences, life)
		if err != nil {
			writeARMError(w, http.StatusBadRequest, "BadRequest", err.Error())
			return
		}
		iss := in.Issuer
		if iss == "" {
			iss = e.OIDCIssuer()
		}
		writeJSON(w, http.StatusOK, map[string]string{"token": tok, "issuer": iss})
	case "GET /_admin/info":
		ep, _ := e.ManagedIdentityEndpoint()
		writeJSON(w, http.StatusOK, map[string]any{
			"armEndpoint": e.ARMEndpoint(), "authorityHost": e.AuthorityHost(), "tenantId": e.tenantID,
			"subscriptionId": e.subscriptionID, "oidcIssuer": e.OIDCIssuer(), "identityEndpoint": ep,
		})
	default:
		writeARMError(w, http.StatusNotFound, "NotFound", "unknown admin endpoint "+route)
	}
}
