package emulator

import (
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gitaso/gitaso/emulator/internal/armtable"
)

type opKind int

const (
	opPut opKind = iota
	opDelete
)

// Operation statuses as ARM reports them.
const (
	statusInProgress = "InProgress"
	statusSucceeded  = "Succeeded"
	statusFailed     = "Failed"
	statusCanceled   = "Canceled"
)

// operation is one long-running operation. Its resource moves Accepted → Creating/Updating (after a third of the
// latency) → Succeeded/Failed (after the latency); a DELETE removes the resource (and its descendants) at the end.
type operation struct {
	ID         string
	resKey     string
	resID      string
	typeKey    string
	ns         string
	sub        string
	region     string
	apiVersion string
	kind       opKind
	create     bool
	start      time.Time
	mid        time.Time
	due        time.Time
	end        time.Time
	phase      int
	status     string
	failCode   string
	failMsg    string
}

func normalizeRegion(loc string) string {
	r := strings.ToLower(strings.ReplaceAll(loc, " ", ""))
	if r == "" {
		return "global"
	}
	return r
}

// startOp registers an operation for res. Caller holds e.mu (write).
func (e *Emulator) startOp(res *resource, kind opKind, create bool, apiVersion string, fail *ProvisioningFailure) *operation {
	now := time.Now()
	lat := e.latencyFor(res.typeKey)
	op := &operation{
		ID: newUUID(), resKey: res.key, resID: res.ID, typeKey: res.typeKey, ns: namespaceOf(res.Type), sub: subOfKey(res),
		region: normalizeRegion(res.Location), apiVersion: apiVersion, kind: kind, create: create,
		start: now, mid: now.Add(lat / 3), due: now.Add(lat), status: statusInProgress,
	}
	if res.typeKey == rgTypeKey {
		op.ns = "Microsoft.Resources"
	}
	if fail != nil {
		op.failCode, op.failMsg = fail.Code, fail.Message
	}
	res.opID = op.ID
	e.ops[op.ID] = op
	e.inflight[op.ID] = op
	e.pending.Add(1)
	return op
}

func subOfKey(r *resource) string {
	if r.subKey == "" {
		return ""
	}
	// keep the casing of the ID
	parts := strings.SplitN(strings.TrimPrefix(r.ID, "/"), "/", 3)
	if len(parts) >= 2 {
		return parts[1]
	}
	return r.subKey
}

// opURL is the absolute URL of an operation's status (Azure-AsyncOperation) or result (Location) resource.
func (e *Emulator) opURL(op *operation, results bool) string {
	var b strings.Builder
	b.WriteString(e.base)
	if op.sub != "" {
		b.WriteString("/subscriptions/")
		b.WriteString(op.sub)
	}
	b.WriteString("/providers/")
	b.WriteString(op.ns)
	b.WriteString("/locations/")
	b.WriteString(op.region)
	if results {
		b.WriteString("/operationResults/")
	} else {
		b.WriteString("/operationStatuses/")
	}
	b.WriteString(op.ID)
	b.WriteString("?api-version=")
	b.WriteString(op.apiVersion)
	return b.String()
}

// advance moves every in-flight operation forward to now.
func (e *Emulator) advance(now time.Time) {
	if e.pending.Load() == 0 {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, op := range e.inflight {
		e.step(op, now)
	}
}

// maxFinishedOps is how many finished operations stay queryable.
const maxFinishedOps = 10000

func (e *Emulator) finishOp(op *operation, status string, now time.Time) {
	op.status, op.end = status, now
	e.activityOpEnded(op) // activity.go
	delete(e.inflight, op.ID)
	e.pending.Add(-1)
	e.finished = append(e.finished, op.ID)
	if len(e.finished) > maxFinishedOps {
		delete(e.ops, e.finished[0])
		e.finished = e.finished[1:]
	}
	e.markDirty()
}

// step advances one operation. Caller holds e.mu (write).
func (e *Emulator) step(op *operation, now time.Time) {
	res := e.store.get(op.resKey)
	if res == nil || res.opID != op.ID {
		if op.kind == opDelete || res != nil {
			e.finishOp(op, statusSucceeded, now) // done, or superseded by a newer operation
		} else {
			op.failCode, op.failMsg = "OperationCanceled", "The operation was canceled because the resource was deleted."
			e.finishOp(op, statusCanceled, now)
		}
		return
	}
	if now.Before(op.due) {
		if op.phase == 0 && !now.Before(op.mid) && op.kind == opPut {
			op.phase = 1
			if op.create {
				e.setState(res, "Creating")
			} else {
				e.setState(res, "Updating")
			}
		}
		return
	}
	switch op.kind {
	case opPut:
		res.opID = ""
		if op.failCode != "" {
			e.setState(res, "Failed")
			e.finishOp(op, statusFailed, now)
			return
		}
		e.setState(res, "Succeeded")
		e.finishOp(op, statusSucceeded, now)
	case opDelete:
		if op.failCode != "" {
			res.opID = ""
			e.setState(res, "Failed")
			e.finishOp(op, statusFailed, now)
			return
		}
		e.removeResource(op.resKey)
		e.finishOp(op, statusSucceeded, now)
	}
}

// setState rewrites properties.provisioningState of a stored resource. Caller holds e.mu (write).
func (e *Emulator) setState(res *resource, state string) {
	if res.state == state {
		return
	}
	m, err := res.decode()
	if err != nil {
		return
	}
	ensureObject(m, "properties")["provisioningState"] = state
	if prop := embeddedCollections[res.typeKey]; prop != "" && e.store.get(res.key) == res {
		// Children written with the parent are provisioned with its operation (network.go).
		e.setEmbeddedStates(res.key, embeddedChildType(res.typeKey), state)
		m["properties"].(map[string]any)[prop] = e.renderEmbedded(res.key, embeddedChildType(res.typeKey))
	}
	res.body = mustJSON(m)
	res.state = state
	if isEmbeddedChild(res.typeKey) && e.store.get(res.key) == res {
		e.syncEmbedded(res.parentKey)
	}
}

// setRetryHeaders sets Retry-After (whole seconds, as ARM does) and retry-after-ms (the precise remaining time,
// at least the poll interval), which azcore honours first.
func (e *Emulator) setRetryHeaders(h http.Header, remaining time.Duration) {
	secs := int(math.Ceil(remaining.Seconds()))
	if secs < 1 {
		secs = 1
	}
	ms := remaining
	if ms < e.opts.pollInterval {
		ms = e.opts.pollInterval
	}
	if ms < time.Millisecond {
		ms = time.Millisecond
	}
	h.Set("Retry-After", strconv.Itoa(secs))
	h.Set("retry-after-ms", strconv.FormatInt(ms.Milliseconds(), 10))
}

// serveOperation answers GET on operationStatuses (Azure-AsyncOperation) and operationResults (Location).
func (e *Emulator) serveOperation(w http.ResponseWriter, r *http.Request, p armPath, results bool) {
	if r.Method != http.MethodGet {
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed on the operation resource.")
		return
	}
	e.mu.RLock()
	op := e.ops[strings.ToLower(p.Name)]
	var o operation
	var body []byte
	if op != nil {
		o = *op
		if res := e.store.get(op.resKey); res != nil {
			body = res.body
		}
	}
	e.mu.RUnlock()
	if op == nil {
		writeARMError(w, http.StatusNotFound, "OperationNotFound", "The operation '"+p.Name+"' could not be found.")
		return
	}
	now := time.Now()
	if o.status == statusInProgress {
		e.setRetryHeaders(w.Header(), o.due.Sub(now))
	}
	if results {
		switch o.status {
		case statusInProgress:
			w.Header().Set("Location", e.opURL(&o, true))
			w.WriteHeader(http.StatusAccepted)
		case statusSucceeded:
			if o.kind == opDelete || body == nil {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(body)
		default:
			writeARMError(w, http.StatusBadRequest, o.failCode, o.failMsg)
		}
		return
	}
	out := map[string]any{
		"id":        strings.TrimPrefix(strings.SplitN(e.opURL(&o, false), "?", 2)[0], e.base),
		"name":      o.ID,
		"status":    o.status,
		"startTime": armTime(o.start),
	}
	if o.status != statusInProgress {
		out["endTime"] = armTime(o.end)
		out["percentComplete"] = 100
	}
	if o.failCode != "" && o.status != statusSucceeded {
		out["error"] = map[string]any{"code": o.failCode, "message": o.failMsg}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(out)
}

// answerPut answers a stored PUT or PATCH as ans says (armtable.go): synchronously with the final resource, or with
// an operation to poll through the headers ans names. Caller holds e.mu (write).
func (e *Emulator) answerPut(res *resource, ans armtable.Answer, apiVersion string, create bool, fail *ProvisioningFailure) (int, map[string]string, []byte, *armError) {
	hdr := map[string]string{}
	if isSync(ans) {
		if ans.Location {
			hdr["Location"] = res.ID + "?api-version=" + apiVersion // relative, as ARM sends on a user-assigned identity's 201
		}
		return ans.Status, hdr, res.body, nil
	}
	op := e.startOp(res, opPut, create, apiVersion, fail)
	h := http.Header{}
	e.setPollHeaders(h, op, ans)
	for k := range h {
		hdr[k] = h.Get(k)
	}
	if ans.Status == http.StatusAccepted {
		return http.StatusAccepted, hdr, nil, nil
	}
	return ans.Status, hdr, res.body, nil
}

// setPollHeaders sets the headers of an answer that starts op: Azure-AsyncOperation (the operation's status) when
// ans has A, Location (the operation's result) when it has L or names neither, and the retry headers.
func (e *Emulator) setPollHeaders(h http.Header, op *operation, ans armtable.Answer) {
	if ans.AsyncOperation {
		h.Set("Azure-AsyncOperation", e.opURL(op, false))
	}
	if ans.Location || !ans.AsyncOperation {
		h.Set("Location", e.opURL(op, true))
	}
	e.setRetryHeaders(h, time.Until(op.due))
}
