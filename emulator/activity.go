package emulator

import (
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Activity Log: every control-plane write (PUT, PATCH, DELETE, POST action) that passed authentication and
// throttling is recorded as Azure's Activity Log records it, per subscription: a Started event when the request
// arrives, then Succeeded or Failed (and Accepted for a write that started a long-running operation, whose
// Succeeded or Failed comes when the operation ends). Writes through the admin API that simulate changes made
// outside gitaso (SetResourceProperties, WriteOutOfBand) are recorded too, with their own caller.
//
//	GET /subscriptions/{sub}/providers/Microsoft.Insights/eventtypes/management/values?api-version=2015-04-01
//	    &$filter=eventTimestamp ge '…' and eventTimestamp le '…' [and resourceGroupName eq '…' | resourceUri eq '…'
//	    | resourceProvider eq '…' | correlationId eq '…' | caller eq '…'][&$select=a,b,…]
//
// answers {"value":[events, newest first], "nextLink": …} in pages of activityPageSize, with Azure's EventData
// shape. The log keeps the last maxActivityEvents events (Azure keeps 90 days; tests need far less).

const (
	activityPageSize = 200
	// maxActivityEvents bounds the log's memory (some 25 MB): the oldest events go first.
	maxActivityEvents = 50_000
	// AdminCaller is the caller the Activity Log names for writes made through the admin API.
	AdminCaller = "emulator-admin"
)

// activityEvent is one Activity Log record.
type activityEvent struct {
	at          time.Time
	seq         int64
	sub         string // as in the resource ID
	rg          string
	resourceID  string
	typ         string // ARM type of the resource
	operation   string // "Microsoft.Storage/storageAccounts/write"
	status      string // Started, Accepted, Succeeded, Failed
	subStatus   string // "Created", "OK", "BadRequest", …
	httpStatus  int
	caller      string
	correlation string
	operationID string
	method      string
	clientIP    string
	errorCode   string
}

// pendingActivity is the Accepted event of a write whose operation is still running.
type pendingActivity struct{ ev activityEvent }

// activityLog holds the events, oldest first.
type activityLog struct {
	mu      sync.Mutex
	events  []activityEvent
	seq     int64
	pending map[string]pendingActivity // by operation ID
}

func (l *activityLog) add(ev activityEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.addLocked(ev)
}

func (l *activityLog) addLocked(ev activityEvent) {
	l.seq++
	ev.seq = l.seq
	if n := len(l.events); n > 0 && ev.at.Before(l.events[n-1].at) {
		ev.at = l.events[n-1].at // keep the log ordered by time
	}
	l.events = append(l.events, ev)
	if len(l.events) >= maxActivityEvents+maxActivityEvents/4 {
		l.events = append([]activityEvent(nil), l.events[len(l.events)-maxActivityEvents:]...)
	}
}

// operationName renders an ARM operation of a resource type ("write", "delete", "listKeys/action").
func operationName(typ, verb string) string {
	if strings.EqualFold(typ, typeResourceGroup) {
		typ = "Microsoft.Resources/subscriptions/resourceGroups"
	}
	return typ + "/" + verb
}

// activityWriter remembers the status of a write's response for the Activity Log.
type activityWriter struct {
	http.ResponseWriter
	status int
}

func (a *activityWriter) WriteHeader(code int) {
	if a.status == 0 {
		a.status = code
	}
	a.ResponseWriter.WriteHeader(code)
}

func (a *activityWriter) Write(b []byte) (int, error) {
	if a.status == 0 {
		a.status = http.StatusOK
	}
	return a.ResponseWriter.Write(b)
}

// trackWrite starts recording an ARM request in the Activity Log when it is a control-plane write: it returns the
// writer to serve the request with and a function to call once it is served.
func (e *Emulator) trackWrite(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims) (http.ResponseWriter, func()) {
	var id, typ, verb string
	switch {
	case r.Method == http.MethodPut || r.Method == http.MethodPatch:
		if p.Kind != pathResource {
			return w, func() {}
		}
		id, typ, verb = p.ID, p.Type, "write"
	case r.Method == http.MethodDelete:
		if p.Kind != pathResource {
			return w, func() {}
		}
		id, typ, verb = p.ID, p.Type, "delete"
	case r.Method == http.MethodPost && p.Kind == pathTail && p.Parent != "" && !strings.EqualFold(p.Namespace, "Microsoft.ResourceGraph"):
		if strings.EqualFold(p.ParentType, typeSubscription) || strings.EqualFold(p.ParentType, typeTenant) {
			return w, func() {} // provider registration and other subscription actions
		}
		id, typ, verb = p.Parent, p.ParentType, p.Tail+"/action"
	default:
		return w, func() {}
	}
	sp := parseARMPath(id)
	if sp.Sub == "" {
		return w, func() {}
	}
	caller := ""
	if c != nil {
		caller = firstNonEmpty(c.Oid, c.AppID)
	}
	ip := r.RemoteAddr
	if i := strings.LastIndexByte(ip, ':'); i > 0 {
		ip = strings.Trim(ip[:i], "[]")
	}
	base := activityEvent{
		at: nowUTC(), sub: sp.Sub, rg: sp.RG, resourceID: id, typ: typ, operation: operationName(typ, verb),
		caller: caller, correlation: w.Header().Get("x-ms-correlation-request-id"), operationID: newUUID(),
		method: r.Method, clientIP: ip,
	}
	started := base
	started.status = "Started"
	e.activity.add(started)
	aw := &activityWriter{ResponseWriter: w}
	return aw, func() {
		ev := base
		ev.at = nowUTC()
		ev.httpStatus = aw.status
		if ev.httpStatus == 0 {
			ev.httpStatus = http.StatusOK
		}
		ev.subStatus = subStatusOf(ev.httpStatus)
		h := aw.Header()
		switch {
		case ev.httpStatus >= 400:
			ev.status = "Failed"
		case h.Get("Azure-AsyncOperation") != "" || (ev.httpStatus == http.StatusAccepted && h.Get("Location") != ""):
			ev.status = "Accepted"
			poll := firstNonEmpty(h.Get("Azure-AsyncOperation"), h.Get("Location"))
			if opID := lastSegment(strings.SplitN(poll, "?", 2)[0]); opID != "" {
				e.activity.mu.Lock()
				e.activity.addLocked(ev)
				if e.activity.pending == nil {
					e.activity.pending = map[string]pendingActivity{}
				}
				e.activity.pending[strings.ToLower(opID)] = pendingActivity{ev: base}
				e.activity.mu.Unlock()
				return
			}
		default:
			ev.status = "Succeeded"
		}
		e.activity.add(ev)
	}
}

// activityOpEnded records the end of a write's operation. Called by finishOp (e.mu held).
func (e *Emulator) activityOpEnded(op *operation) {
	l := &e.activity
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pending[strings.ToLower(op.ID)]
	if !ok {
		return
	}
	delete(l.pending, strings.ToLower(op.ID))
	ev := p.ev
	ev.at = op.end
	ev.httpStatus = http.StatusOK
	switch op.status {
	case statusSucceeded:
		ev.status, ev.subStatus = "Succeeded", ""
	default:
		ev.status, ev.subStatus, ev.errorCode = "Failed", "", op.failCode
	}
	l.addLocked(ev)
}

func subStatusOf(code int) string {
	switch code {
	case http.StatusOK:
		return "OK"
	case http.StatusCreated:
		return "Created"
	case http.StatusAccepted:
		return "Accepted"
	case http.StatusNoContent:
		return "NoContent"
	case http.StatusBadRequest:
		return "BadRequest"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden"
	case http.StatusNotFound:
		return "NotFound"
	case http.StatusConflict:
		return "Conflict"
	}
	return http.StatusText(code)
}

// recordAdminWrite records a write made through the admin API (drift made outside gitaso). Caller may hold e.mu.
func (e *Emulator) recordAdminWrite(id, verb, caller string) {
	p := parseARMPath(id)
	if p.Sub == "" {
		return
	}
	base := activityEvent{
		at: nowUTC(), sub: p.Sub, rg: p.RG, resourceID: p.ID, typ: p.Type, operation: operationName(p.Type, verb),
		caller: firstNonEmpty(caller, AdminCaller), correlation: newUUID(), operationID: newUUID(), method: "PUT", clientIP: "127.0.0.1",
	}
	if verb == "delete" {
		base.method = http.MethodDelete
	}
	started := base
	started.status = "Started"
	done := base
	done.status, done.httpStatus, done.subStatus = "Succeeded", http.StatusOK, "OK"
	e.activity.mu.Lock()
	e.activity.addLocked(started)
	e.activity.addLocked(done)
	e.activity.mu.Unlock()
}

func (ev *activityEvent) json(tenant string) map[string]any {
	lv := func(v string) map[string]any { return map[string]any{"value": v, "localizedValue": v} }
	level := "Informational"
	if ev.status == "Failed" {
		level = "Error"
	}
	// A UUID (version 4 layout) unique per event: the sequence number and the time.
	a := uint64(ev.seq)
	eventDataID := fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", uint32(a>>32), uint16(a>>16), (a>>4)&0xfff, (a&0xf)<<8, uint64(ev.at.UnixNano())&0xffffffffffff)
	ticks := strconv.FormatInt(ev.at.UnixNano()/100+621355968000000000, 10) // .NET ticks, as Azure's event IDs carry
	props := map[string]any{"eventCategory": "Administrative", "entity": ev.resourceID, "message": ev.operation, "hierarchy": tenant}
	if ev.httpStatus != 0 {
		props["statusCode"] = http.StatusText(ev.httpStatus)
	}
	if ev.errorCode != "" {
		props["statusMessage"] = `{"error":{"code":"` + ev.errorCode + `"}}`
	}
	out := map[string]any{
		"authorization": map[string]any{"action": ev.operation, "scope": ev.resourceID},
		"caller":        ev.caller,
		"channels":      "Operation",
		"claims": map[string]any{
			"http://schemas.microsoft.com/identity/claims/objectidentifier": ev.caller,
			"http://schemas.microsoft.com/identity/claims/tenantid":         tenant,
		},
		"correlationId":        ev.correlation,
		"description":          "",
		"eventDataId":          eventDataID,
		"eventName":            map[string]any{"value": map[bool]string{true: "BeginRequest", false: "EndRequest"}[ev.status == "Started"], "localizedValue": map[bool]string{true: "Begin request", false: "End request"}[ev.status == "Started"]},
		"category":             lv("Administrative"),
		"eventTimestamp":       ev.at.UTC().Format("2006-01-02T15:04:05.0000000Z"),
		"id":                   ev.resourceID + "/events/" + eventDataID + "/ticks/" + ticks,
		"level":                level,
		"operationId":          ev.operationID,
		"operationName":        lv(ev.operation),
		"resourceGroupName":    ev.rg,
		"resourceProviderName": lv(namespaceOf(ev.typ)),
		"resourceType":         lv(ev.typ),
		"resourceId":           ev.resourceID,
		"status":               lv(ev.status),
		"subStatus":            lv(ev.subStatus),
		"submissionTimestamp":  ev.at.UTC().Add(time.Second).Format("2006-01-02T15:04:05.0000000Z"),
		"subscriptionId":       ev.sub,
		"tenantId":             tenant,
		"properties":           props,
		"httpRequest":          map[string]any{"clientRequestId": ev.correlation, "clientIpAddress": ev.clientIP, "method": ev.method},
	}
	if ev.rg == "" {
		delete(out, "resourceGroupName")
	}
	return out
}

// activityFilter is a parsed $filter of the Activity Log.
type activityFilter struct {
	from, to time.Time
	field    string // resourcegroupname, resourceuri, resourceprovider, correlationid, caller, status
	value    string
}

var activityClauseRE = regexp.MustCompile(`^\s*(\w+)\s+(ge|le|eq)\s+'([^']*)'\s*$`)

func parseActivityFilter(f string) (activityFilter, *armError) {
	var out activityFilter
	if strings.TrimSpace(f) == "" {
		return out, errActivity("The $filter query parameter is required, with at least eventTimestamp ge '<start time>'.")
	}
	for _, clause := range regexp.MustCompile(`(?i)\s+and\s+`).Split(f, -1) {
		m := activityClauseRE.FindStringSubmatch(clause)
		if m == nil {
			return out, errActivity("The $filter clause '%s' is not supported: use eventTimestamp ge/le '<time>' and one of resourceGroupName, resourceUri, resourceProvider, correlationId, caller or status eq '<value>'.", strings.TrimSpace(clause))
		}
		field, op, val := strings.ToLower(m[1]), strings.ToLower(m[2]), m[3]
		switch {
		case field == "eventtimestamp" && (op == "ge" || op == "le"):
			t, err := time.Parse(time.RFC3339Nano, val)
			if err != nil {
				return out, errActivity("The $filter value '%s' of eventTimestamp is not a valid time (RFC 3339).", val)
			}
			if op == "ge" {
				out.from = t
			} else {
				out.to = t
			}
		case field == "eventchannels" && op == "eq":
		case op == "eq" && (field == "resourcegroupname" || field == "resourceuri" || field == "resourceprovider" || field == "correlationid" || field == "caller" || field == "status" || field == "resourceid"):
			if out.field != "" {
				return out, errActivity("The $filter may name only one of resourceGroupName, resourceUri, resourceProvider, correlationId, caller or status.")
			}
			if field == "resourceid" {
				field = "resourceuri"
			}
			out.field, out.value = field, val
		default:
			return out, errActivity("The $filter clause '%s' is not supported.", strings.TrimSpace(clause))
		}
	}
	if out.from.IsZero() {
		return out, errActivity("The $filter must contain eventTimestamp ge '<start time>'.")
	}
	if out.to.IsZero() {
		out.to = nowUTC()
	}
	if out.to.Sub(out.from) > 90*24*time.Hour {
		return out, errActivity("The time range of the $filter must not exceed 90 days.")
	}
	return out, nil
}

func errActivity(format string, args ...any) *armError {
	return newARMError(http.StatusBadRequest, "BadRequest", format, args...)
}

func (f *activityFilter) match(ev *activityEvent) bool {
	if ev.at.Before(f.from) || ev.at.After(f.to) {
		return false
	}
	switch f.field {
	case "resourcegroupname":
		return strings.EqualFold(ev.rg, f.value)
	case "resourceuri":
		return strings.EqualFold(ev.resourceID, f.value)
	case "resourceprovider":
		return strings.EqualFold(namespaceOf(ev.typ), f.value)
	case "correlationid":
		return strings.EqualFold(ev.correlation, f.value)
	case "caller":
		return strings.EqualFold(ev.caller, f.value)
	case "status":
		return strings.EqualFold(ev.status, f.value)
	}
	return true
}

// isActivityLogPath reports whether p is {subscription}/providers/Microsoft.Insights/eventtypes/management/values.
func isActivityLogPath(p armPath) bool {
	return p.Kind == pathTail && strings.EqualFold(p.Tail, "values") && strings.EqualFold(p.ParentType, "Microsoft.Insights/eventtypes") &&
		strings.EqualFold(lastSegment(p.Parent), "management") && p.Sub != "" && p.RG == "" &&
		strings.EqualFold(p.Parent, "/subscriptions/"+p.Sub+"/providers/Microsoft.Insights/eventtypes/management")
}

// serveActivityLog answers the Activity Log query of a subscription.
func (e *Emulator) serveActivityLog(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) {
	if !e.authorize(w, c, "Microsoft.Insights/eventtypes/values/read", "/subscriptions/"+p.Sub, info) {
		return
	}
	q := r.URL.Query()
	f, aerr := parseActivityFilter(q.Get("$filter"))
	if aerr != nil {
		e.writeErr(w, info, aerr)
		return
	}
	var sel []string
	if s := q.Get("$select"); s != "" {
		for _, x := range strings.Split(s, ",") {
			if x = strings.TrimSpace(x); x != "" {
				sel = append(sel, x)
			}
		}
	}
	skip := 0
	if tok := q.Get("$skipToken"); tok != "" {
		n, err := strconv.Atoi(tok)
		if err != nil || n < 0 {
			e.writeErr(w, info, errActivity("The $skipToken '%s' is not valid.", tok))
			return
		}
		skip = n
	}
	e.activity.mu.Lock()
	var matched []activityEvent
	for i := len(e.activity.events) - 1; i >= 0; i-- { // newest first
		ev := &e.activity.events[i]
		if strings.EqualFold(ev.sub, p.Sub) && f.match(ev) {
			matched = append(matched, *ev)
		}
	}
	e.activity.mu.Unlock()
	sort.SliceStable(matched, func(i, j int) bool { return matched[i].seq > matched[j].seq })
	if skip > len(matched) {
		skip = len(matched)
	}
	end := min(skip+activityPageSize, len(matched))
	values := make([]any, 0, end-skip)
	for i := skip; i < end; i++ {
		m := matched[i].json(e.tenantID)
		if len(sel) > 0 {
			picked := map[string]any{}
			for _, k := range sel {
				for name, v := range m {
					if strings.EqualFold(name, k) {
						picked[name] = v
					}
				}
			}
			m = picked
		}
		values = append(values, m)
	}
	out := map[string]any{"value": values}
	if end < len(matched) {
		q.Set("$skipToken", strconv.Itoa(end))
		out["nextLink"] = e.base + r.URL.Path + "?" + q.Encode()
	}
	writeJSON(w, http.StatusOK, out)
}

// ActivityEvent is an Activity Log event as the emulator's Go API returns it.
type ActivityEvent struct {
	Time          time.Time
	ResourceID    string
	OperationName string
	Status        string
	Caller        string
	CorrelationID string
}

// ActivityLog returns the events of a subscription recorded at or after since, oldest first.
func (e *Emulator) ActivityLog(subscription string, since time.Time) []ActivityEvent {
	e.activity.mu.Lock()
	defer e.activity.mu.Unlock()
	var out []ActivityEvent
	for _, ev := range e.activity.events {
		if strings.EqualFold(ev.sub, subscription) && !ev.at.Before(since) {
			out = append(out, ActivityEvent{Time: ev.at, ResourceID: ev.resourceID, OperationName: ev.operation, Status: ev.status,
				Caller: ev.caller, CorrelationID: ev.correlation})
		}
	}
	return out
}
