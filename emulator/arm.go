package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

const (
	maxBodyBytes = 4 << 20
	listPageSize = 1000
)

var apiVersionRE = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(-(preview|privatepreview|beta|alpha))?$`)

func validAPIVersion(v string) bool {
	m := apiVersionRE.FindStringSubmatch(strings.ToLower(v))
	if m == nil {
		return false
	}
	if _, err := time.Parse("2006-01-02", m[1]+"-"+m[2]+"-"+m[3]); err != nil {
		return false
	}
	return m[1] >= "2014"
}

// throttle classes
const (
	classRead = iota
	classWrite
	classDelete
)

func classOf(method string) int {
	switch method {
	case http.MethodGet, http.MethodHead:
		return classRead
	case http.MethodDelete:
		return classDelete
	default:
		return classWrite
	}
}

// serveARM runs an ARM request through faults, authentication, api-version, throttling and dispatch.
func (e *Emulator) serveARM(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	h := w.Header()
	reqID := newUUID()
	h.Set("x-ms-request-id", reqID)
	corr := r.Header.Get("x-ms-correlation-request-id")
	if corr == "" {
		corr = reqID
	}
	h.Set("x-ms-correlation-request-id", corr)
	h.Set("x-ms-routing-request-id", "LOCAL:"+reqID)
	p := parseARMPath(r.URL.Path)
	info.typ = pathTypeKey(p)
	switch e.faults.inject(w, r, info, e.opts.pollInterval) {
	case faultAnswered:
		return
	case faultResetAfter:
		// The request takes effect; its response is discarded and the connection reset (Faults.ResetAfterRate).
		w = &discardWriter{header: http.Header{}}
		defer resetAfterServing()
	}
	claims, ok := e.authenticate(w, r, info)
	if !ok {
		return
	}
	versions := r.URL.Query()["api-version"]
	if len(versions) == 0 || versions[0] == "" {
		info.code = "MissingApiVersionParameter"
		writeARMError(w, http.StatusBadRequest, info.code, "The api-version query parameter (?api-version=) is required for all requests.")
		return
	}
	apiVersion := versions[0]
	if !validAPIVersion(apiVersion) {
		info.code = "InvalidApiVersionParameter"
		writeARMError(w, http.StatusBadRequest, info.code, fmt.Sprintf("The api-version '%s' is invalid. The supported versions are '%s'.", apiVersion, "2014-04-01 through "+time.Now().Format("2006-01-02")))
		return
	}
	graph := p.Kind == pathTail && p.Parent == "" && strings.EqualFold(p.Namespace, "Microsoft.ResourceGraph")
	if !graph && !e.throttle.allow(w, strings.ToLower(p.Sub), claims.Oid, classOf(r.Method), info) {
		return
	}
	e.advance(time.Now())
	if p.Sub != "" {
		e.mu.RLock()
		ok := e.subs[strings.ToLower(p.Sub)] != nil
		e.mu.RUnlock()
		if !ok {
			info.code = "SubscriptionNotFound"
			writeARMError(w, http.StatusNotFound, info.code, fmt.Sprintf("The subscription '%s' could not be found.", p.Sub))
			return
		}
	}
	if r.Method == http.MethodGet && isActivityLogPath(p) {
		e.serveActivityLog(w, r, p, claims, info) // activity.go
		return
	}
	w, recorded := e.trackWrite(w, r, p, claims) // the Activity Log (activity.go)
	defer recorded()
	if e.serveBehaviour(w, r, p, claims, info) { // hooks.go
		return
	}
	if e.serveExtras(w, r, p, claims, info, apiVersion) { // cliextras.go
		return
	}
	switch p.Kind {
	case pathSubList:
		e.serveSubscriptionList(w, r, claims)
	case pathProvider, pathProviderList:
		e.serveProvider(w, r, p)
	case pathResource:
		tk := strings.ToLower(p.Type)
		switch {
		case strings.HasSuffix(tk, "/locations/operationstatuses"):
			e.serveOperation(w, r, p, false)
		case strings.HasSuffix(tk, "/locations/operationresults"):
			e.serveOperation(w, r, p, true)
		case p.Type == typeSubscription:
			e.serveSubscription(w, r, p, claims, info)
		case tk == deletedVaultTypeKey:
			e.serveDeletedVault(w, r, p, claims, info, false, apiVersion)
		case tk == roleDefTypeKey && builtinByGUID[strings.ToLower(p.Name)] != nil && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			// Built-in role definitions are readable by every principal of the tenant.
			writeJSON(w, http.StatusOK, builtinRoleJSON(builtinByGUID[strings.ToLower(p.Name)], p.ID))
		default:
			e.serveResource(w, r, p, claims, info, apiVersion)
		}
	case pathTail:
		switch {
		case graph && r.Method == http.MethodPost && strings.EqualFold(p.Tail, "resources"):
			e.serveGraph(w, r, claims, info)
		case r.Method == http.MethodPost && strings.EqualFold(p.ParentType, "Microsoft.KeyVault/locations/deletedVaults") && strings.EqualFold(p.Tail, "purge"):
			e.serveDeletedVault(w, r, p, claims, info, true, apiVersion)
		case r.Method == http.MethodGet && p.ParentType == typeSubscription && strings.EqualFold(p.Type, deletedVaultType):
			e.serveDeletedVaultList(w, p, claims, info)
		case r.Method == http.MethodGet:
			e.serveList(w, r, p, claims, info)
		case r.Method == http.MethodPost && p.ParentType == typeSubscription && p.Namespace != "" && (strings.EqualFold(p.Tail, "register") || strings.EqualFold(p.Tail, "unregister")):
			e.serveProvider(w, r, armPath{Kind: pathProvider, Parent: p.Parent, Namespace: p.Namespace})
		case r.Method == http.MethodPost:
			e.serveAction(w, r, p, claims, info)
		default:
			writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed on a collection.")
		}
	default:
		info.code = "InvalidResourceType"
		writeARMError(w, http.StatusBadRequest, "InvalidRequestUri", fmt.Sprintf("The request URI '%s' is not valid.", r.URL.Path))
	}
}

func pathTypeKey(p armPath) string {
	switch p.Kind {
	case pathResource, pathTail:
		return strings.ToLower(p.Type)
	case pathSubList:
		return "microsoft.resources/subscriptions"
	case pathProvider, pathProviderList:
		return "microsoft.resources/providers"
	}
	return ""
}

func scopeOrRoot(s string) string {
	if s == "" {
		return "/"
	}
	return s
}

// resourcePath renders "Namespace/type1/name1/type2/name2" from an ID as ARM's not-found messages do.
func resourcePath(id string) string {
	i := strings.LastIndex(strings.ToLower(id), "/providers/")
	if i < 0 {
		return strings.TrimPrefix(id, "/")
	}
	return id[i+len("/providers/"):]
}

// parentNames renders the names of the parent chain ("sa/default") for ParentResourceNotFound.
func parentNames(parentID string) string {
	segs := strings.Split(resourcePath(parentID), "/")
	var names []string
	for i := 2; i < len(segs); i += 2 {
		names = append(names, segs[i])
	}
	return strings.Join(names, "/")
}

func (e *Emulator) rgMissing(p armPath) bool {
	if p.RG == "" {
		return false
	}
	return e.store.get(strings.ToLower("/subscriptions/"+p.Sub+"/resourceGroups/"+p.RG)) == nil
}

// notFound returns ARM's 404 for a missing resource. Caller holds e.mu.
func (e *Emulator) notFound(p armPath) *armError {
	if strings.EqualFold(p.Type, typeResourceGroup) || e.rgMissing(p) {
		rg := p.RG
		return newARMError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", rg)
	}
	if p.RG != "" {
		return newARMError(http.StatusNotFound, "ResourceNotFound", "The Resource '%s' under resource group '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", resourcePath(p.ID), p.RG)
	}
	return newARMError(http.StatusNotFound, "ResourceNotFound", "The Resource '%s' was not found. For more details please go to https://aka.ms/ARMResourceNotFoundFix", resourcePath(p.ID))
}

// checkParent verifies that the resource group and the parent resource exist. Caller holds e.mu.
func (e *Emulator) checkParent(p armPath) *armError {
	if strings.EqualFold(p.Type, typeResourceGroup) {
		return nil
	}
	if e.rgMissing(p) {
		return newARMError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", p.RG)
	}
	parentIsResource := p.Extension || typeDepth(p.Type) > 1
	if !parentIsResource || p.Parent == "" {
		return nil
	}
	if e.store.get(strings.ToLower(p.Parent)) != nil {
		return nil
	}
	if p.Extension {
		pp := parseARMPath(p.Parent)
		return e.notFound(pp)
	}
	return newARMError(http.StatusNotFound, "ParentResourceNotFound", "Can not perform requested operation on nested resource. Parent resource '%s' not found.", parentNames(p.Parent))
}

func (e *Emulator) writeErr(w http.ResponseWriter, info *reqInfo, aerr *armError) {
	info.code = aerr.Code
	writeARMError(w, aerr.Status, aerr.Code, aerr.Message)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func (e *Emulator) serveResource(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo, apiVersion string) {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if !e.authorize(w, c, actionFor(p.Type, "read"), p.ID, info) {
			return
		}
		e.mu.RLock()
		res := e.store.get(strings.ToLower(p.ID))
		var body []byte
		var aerr *armError
		if res != nil {
			body = res.body
		} else {
			aerr = e.notFound(p)
		}
		e.mu.RUnlock()
		if aerr != nil {
			if r.Method == http.MethodHead {
				info.code = aerr.Code
				w.WriteHeader(http.StatusNotFound)
				return
			}
			e.writeErr(w, info, aerr)
			return
		}
		if r.Method == http.MethodHead {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		writeRaw(w, http.StatusOK, body)
	case http.MethodPut, http.MethodPatch:
		e.servePut(w, r, p, c, info, apiVersion, r.Method == http.MethodPatch)
	case http.MethodDelete:
		e.serveDelete(w, p, c, info, apiVersion)
	default:
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed.")
	}
}

func (e *Emulator) servePut(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo, apiVersion string, patch bool) {
	if !e.authorize(w, c, actionFor(p.Type, "write"), p.ID, info) {
		return
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err != nil {
		e.writeErr(w, info, newARMError(http.StatusRequestEntityTooLarge, "RequestContentTooLarge", "The request content size exceeds the maximum size of 4 MB."))
		return
	}
	var in map[string]any
	if err := json.Unmarshal(raw, &in); err != nil || in == nil {
		msg := "The request content was invalid and could not be deserialized: 'the request body is empty or not a JSON object'."
		if err != nil {
			msg = fmt.Sprintf("The request content was invalid and could not be deserialized: '%v'.", err)
		}
		e.writeErr(w, info, newARMError(http.StatusBadRequest, "InvalidRequestContent", "%s", msg))
		return
	}
	status, hdr, body, aerr := e.put(p, in, patch, apiVersion)
	if aerr != nil {
		e.writeErr(w, info, aerr)
		return
	}
	for k, v := range hdr {
		w.Header().Set(k, v)
	}
	if body == nil {
		w.WriteHeader(status)
		return
	}
	writeRaw(w, status, body)
}

// put creates, replaces or patches a resource. It returns the status, extra headers and body.
func (e *Emulator) put(p armPath, in map[string]any, patch bool, apiVersion string) (int, map[string]string, []byte, *armError) {
	typeKey := strings.ToLower(p.Type)
	key := strings.ToLower(p.ID)
	e.mu.Lock()
	defer e.mu.Unlock()
	if aerr := e.checkParent(p); aerr != nil {
		return 0, nil, nil, aerr
	}
	existing := e.store.get(key)
	var old map[string]any
	if existing != nil {
		var err error
		if old, err = existing.decode(); err != nil {
			return 0, nil, nil, newARMError(http.StatusInternalServerError, "InternalServerError", "%v", err)
		}
	}
	body := in
	if patch {
		if existing == nil {
			return 0, nil, nil, e.notFound(p)
		}
		body = deepCopyJSON(old)
		mergePatch(body, in)
	}
	if existing != nil && existing.opID != "" {
		if op := e.ops[existing.opID]; op != nil && op.kind == opDelete && op.status == statusInProgress {
			return 0, nil, nil, newARMError(http.StatusConflict, "Conflict", "The resource '%s' is being deleted and cannot be updated.", resourcePath(p.ID))
		}
	}
	recovered := false
	if typeKey == vaultTypeKey && existing == nil {
		var aerr *armError
		if body, recovered, aerr = e.prepareVault(p, body); aerr != nil {
			return 0, nil, nil, aerr
		}
	}
	loc, _ := body["location"].(string)
	if isTracked(p, typeKey) && loc == "" {
		return 0, nil, nil, newARMError(http.StatusBadRequest, "LocationRequired", "The location property is required for this definition.")
	}
	if existing != nil && loc != "" && existing.Location != "" && normalizeRegion(loc) != normalizeRegion(existing.Location) {
		where := ""
		if p.RG != "" {
			where = " in resource group '" + p.RG + "'"
		}
		return 0, nil, nil, newARMError(http.StatusConflict, "InvalidResourceLocation",
			"The resource '%s' already exists in location '%s'%s. A resource with the same name cannot be created in location '%s'. Please select a new resource name.",
			p.Name, normalizeRegion(existing.Location), where, normalizeRegion(loc))
	}
	if aerr := e.prepareBehaviour(p, typeKey, body, old); aerr != nil { // hooks.go
		return 0, nil, nil, aerr
	}
	if aerr := e.prepareTypeSpecific(p, typeKey, body, old); aerr != nil {
		return 0, nil, nil, aerr
	}
	op := writeCreate
	switch {
	case existing != nil && patch:
		op = writePatch
	case existing != nil:
		op = writeUpdate
	}
	ans := e.answerFor(typeKey, p.ID, op) // armtable.go
	sync := isSync(ans)
	fail := e.faults.provisioningFailure(p.ID)
	if sync && fail != nil {
		return 0, nil, nil, newARMError(http.StatusBadRequest, fail.Code, "%s", fail.Message)
	}
	state := "Succeeded"
	if !sync {
		state = "Accepted"
	}
	if serviceSettingsTypes[typeKey] {
		if !patch {
			keepOmittedProperties(p, body, old)
		}
		e.inheritFromParent(p, body)
	}
	e.finishBody(p, body, old, state)
	if existing != nil {
		e.reconcileEmbedded(existing.ID, typeKey, body)
	} else {
		e.reconcileEmbedded(p.ID, typeKey, body)
	}
	res := newResource(p, loc, mustJSON(body))
	res.state = state
	if existing != nil {
		res.ID, res.Type = existing.ID, existing.Type // the first create fixes the casing
		if res.ID != p.ID {
			body["id"], body["type"] = existing.ID, existing.Type
			res.body = mustJSON(body)
		}
		e.unindexResource(existing)
	}
	e.store.put(res)
	e.indexResource(res, body)
	if existing == nil {
		e.createDefaultChildren(res, false)
	} else {
		e.refreshDefaultChildren(res)
	}
	if isEmbeddedChild(typeKey) {
		e.syncEmbedded(res.parentKey)
	}
	if recovered {
		delete(e.deletedVaults, strings.ToLower(p.Name))
	}
	e.markDirty()
	return e.answerPut(res, ans, apiVersion, existing == nil, fail)
}

func (e *Emulator) serveDelete(w http.ResponseWriter, p armPath, c *accessClaims, info *reqInfo, apiVersion string) {
	if p.Type == typeSubscription {
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "Subscriptions cannot be deleted through this API.")
		return
	}
	if !e.authorize(w, c, actionFor(p.Type, "delete"), p.ID, info) {
		return
	}
	typeKey := strings.ToLower(p.Type)
	key := strings.ToLower(p.ID)
	e.mu.Lock()
	res := e.store.get(key)
	if res == nil {
		var aerr *armError
		if !strings.HasPrefix(typeKey, "microsoft.authorization/") && typeKey != rgTypeKey && e.rgMissing(p) {
			aerr = e.notFound(p)
		}
		e.mu.Unlock()
		if aerr != nil {
			e.writeErr(w, info, aerr)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if aerr := e.refuseDelete(res); aerr != nil { // network.go
		e.mu.Unlock()
		e.writeErr(w, info, aerr)
		return
	}
	ans := e.answerFor(typeKey, p.ID, writeDelete) // armtable.go
	if ans.Status != http.StatusAccepted {
		body := res.body
		e.removeResource(key)
		e.markDirty()
		e.mu.Unlock()
		if ans.Status == http.StatusOK && (typeKey == raTypeKey || typeKey == roleDefTypeKey) {
			writeRaw(w, http.StatusOK, body)
			return
		}
		w.WriteHeader(ans.Status)
		return
	}
	var op *operation
	if cur := e.ops[res.opID]; cur != nil && cur.kind == opDelete && cur.status == statusInProgress {
		op = cur
	} else {
		if cur != nil && cur.status == statusInProgress {
			e.step(cur, time.Now()) // superseded PUT
		}
		var fail *ProvisioningFailure
		if f := e.faults.provisioningFailure(p.ID); f != nil && typeKey != rgTypeKey {
			fail = f
		}
		e.setState(res, "Deleting")
		op = e.startOp(res, opDelete, false, apiVersion, fail)
	}
	e.setPollHeaders(w.Header(), op, ans)
	e.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// serveList answers GET on a collection, paging by listPageSize with $skiptoken.
func (e *Emulator) serveList(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) {
	typeKey := strings.ToLower(p.Type)
	scope := scopeOrRoot(p.Parent)
	parentKey := strings.ToLower(p.Parent)
	if typeKey == roleDefTypeKey {
		e.serveRoleDefinitionList(w, r, p, c, info)
		return
	}
	action := actionFor(p.Type, "read")
	if p.Namespace == "" && strings.EqualFold(p.Tail, "resources") {
		action = "Microsoft.Resources/subscriptions/resources/read"
	}
	ok, partial := e.listAccess(w, c, action, scope, info) // listfilter.go
	if !ok {
		return
	}
	e.mu.RLock()
	var items []*resource
	var aerr *armError
	switch {
	case p.Namespace == "" && strings.EqualFold(p.Tail, "resources"):
		if e.rgMissing(armPath{Sub: p.Sub, RG: p.RG}) {
			aerr = newARMError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", p.RG)
		}
		for _, x := range e.store.under(parentKey) {
			if listedAsResource(x) {
				items = append(items, x)
			}
		}
	case appliesAtScope(typeKey): // authzlist.go
		if p.ParentType == typeResourceGroup && e.rgMissing(armPath{Sub: p.Sub, RG: p.RG}) {
			aerr = newARMError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", p.RG)
		} else {
			items, aerr = e.listApplying(r, typeKey, parentKey)
		}
	case p.ParentType == typeSubscription && p.Namespace != "":
		items = e.store.ofType(typeKey, parentKey)
	default:
		if p.ParentType == typeResourceGroup && e.rgMissing(armPath{Sub: p.Sub, RG: p.RG}) {
			aerr = newARMError(http.StatusNotFound, "ResourceGroupNotFound", "Resource group '%s' could not be found.", p.RG)
		} else if p.ParentType != typeResourceGroup && p.ParentType != typeSubscription && p.ParentType != typeTenant && e.store.get(parentKey) == nil {
			aerr = newARMError(http.StatusNotFound, "ParentResourceNotFound", "Can not perform requested operation on nested resource. Parent resource '%s' not found.", parentNames(p.Parent))
		}
		items = e.store.childrenOf(parentKey, typeKey)
	}
	if aerr == nil {
		items, aerr = e.filterList(r, p, c, items, partial) // listfilter.go
	}
	skip, _ := strconv.Atoi(r.URL.Query().Get("$skiptoken"))
	if skip < 0 || skip > len(items) {
		skip = len(items)
	}
	end := min(skip+listPageSize, len(items))
	var b strings.Builder
	b.WriteString(`{"value":[`)
	for i, x := range items[skip:end] {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(x.body)
	}
	b.WriteByte(']')
	if end < len(items) {
		q := r.URL.Query()
		q.Set("$skiptoken", strconv.Itoa(end))
		next, _ := json.Marshal(e.base + r.URL.Path + "?" + q.Encode())
		b.WriteString(`,"nextLink":`)
		b.Write(next)
	}
	b.WriteByte('}')
	e.mu.RUnlock()
	if aerr != nil {
		e.writeErr(w, info, aerr)
		return
	}
	writeRaw(w, http.StatusOK, []byte(b.String()))
}

var principalFilterRE = regexp.MustCompile(`(?i)principalId\s+eq\s+'([^']+)'`)

func filterAssignments(items []*resource, filter string) []*resource {
	m := principalFilterRE.FindStringSubmatch(filter)
	if m == nil {
		return items
	}
	var out []*resource
	for _, x := range items {
		var body struct {
			Properties struct {
				PrincipalID string `json:"principalId"`
			} `json:"properties"`
		}
		if json.Unmarshal(x.body, &body) == nil && strings.EqualFold(body.Properties.PrincipalID, m[1]) {
			out = append(out, x)
		}
	}
	return out
}

var roleNameFilterRE = regexp.MustCompile(`(?i)roleName\s+eq\s+'([^']+)'`)

func (e *Emulator) serveRoleDefinitionList(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) {
	// Role definitions are readable by every principal of the tenant (ASO resolves wellKnownName with the
	// credential of the namespace, which may hold roles on a resource group only).
	values := []any{}
	for _, rd := range e.builtinRoleList(p.Sub) {
		values = append(values, rd)
	}
	e.mu.RLock()
	for _, x := range e.store.ofType(roleDefTypeKey, strings.ToLower("/subscriptions/"+p.Sub)) {
		var m map[string]any
		if json.Unmarshal(x.body, &m) == nil {
			values = append(values, m)
		}
	}
	e.mu.RUnlock()
	if m := roleNameFilterRE.FindStringSubmatch(r.URL.Query().Get("$filter")); m != nil {
		var out []any
		for _, v := range values {
			if strings.EqualFold(getString(v.(map[string]any), "properties", "roleName"), m[1]) {
				out = append(out, v)
			}
		}
		values = out
	}
	if values == nil {
		values = []any{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"value": values})
}

// serveAction answers POST {resource}/{action}.
func (e *Emulator) serveAction(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) {
	if !e.authorize(w, c, actionFor(p.ParentType, p.Tail+"/action"), scopeOrRoot(p.Parent), info) {
		return
	}
	pp := parseARMPath(p.Parent)
	e.mu.RLock()
	res := e.store.get(strings.ToLower(p.Parent))
	var out map[string]any
	var ok bool
	var aerr *armError
	if res == nil {
		aerr = e.notFound(pp)
	} else if strings.EqualFold(p.Tail, "listKeys") {
		out, ok = e.listKeys(res)
	}
	if !ok && res != nil {
		out, ok = e.exportAction(res, p.Tail) // exports_*.go
	}
	e.mu.RUnlock()
	if aerr != nil {
		e.writeErr(w, info, aerr)
		return
	}
	if !ok {
		e.writeErr(w, info, newARMError(http.StatusNotFound, "InvalidResourceType", "The resource type '%s' could not be found in the namespace '%s' for api version '%s'.",
			p.Tail, namespaceOf(p.ParentType), r.URL.Query().Get("api-version")))
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (e *Emulator) subscriptionJSON(s *subscription) map[string]any {
	out := map[string]any{
		"id": "/subscriptions/" + s.ID, "authorizationSource": "RoleBased", "managedByTenants": []any{},
		"subscriptionId": s.ID, "tenantId": e.tenantID, "displayName": s.DisplayName, "state": firstNonEmpty(s.State, "Enabled"),
		"subscriptionPolicies": map[string]any{"locationPlacementId": "Public_2014-09-01", "quotaId": "PayAsYouGo_2014-09-01", "spendingLimit": "Off"},
	}
	if len(s.Tags) > 0 {
		out["tags"] = s.Tags
	}
	return out
}

func (e *Emulator) serveSubscription(w http.ResponseWriter, r *http.Request, p armPath, c *accessClaims, info *reqInfo) {
	if r.Method != http.MethodGet {
		writeARMError(w, http.StatusMethodNotAllowed, "MethodNotAllowed", "The requested method is not allowed on a subscription.")
		return
	}
	if !e.authorize(w, c, "Microsoft.Resources/subscriptions/read", p.ID, info) {
		return
	}
	e.mu.RLock()
	s := e.subs[strings.ToLower(p.Sub)]
	e.mu.RUnlock()
	writeJSON(w, http.StatusOK, e.subscriptionJSON(s))
}

func (e *Emulator) serveSubscriptionList(w http.ResponseWriter, r *http.Request, c *accessClaims) {
	e.mu.RLock()
	values := []any{}
	for k, s := range e.subs {
		if e.rbac.allowed(c.Oid, "microsoft.resources/subscriptions/read", "/subscriptions/"+k) {
			values = append(values, e.subscriptionJSON(s))
		}
	}
	e.mu.RUnlock()
	writeJSON(w, http.StatusOK, map[string]any{"value": values, "count": map[string]any{"type": "Total", "value": len(values)}})
}

// serveProvider answers resource provider reads and (un)registration: every provider is registered.
func (e *Emulator) serveProvider(w http.ResponseWriter, r *http.Request, p armPath) {
	one := func(ns string) map[string]any {
		return map[string]any{"id": p.Parent + "/providers/" + ns, "namespace": ns, "registrationState": "Registered",
			"registrationPolicy": "RegistrationRequired", "resourceTypes": []any{}}
	}
	if p.Kind == pathProviderList {
		values := []any{}
		for _, ns := range []string{"Microsoft.Authorization", "Microsoft.ManagedIdentity", "Microsoft.Resources", "Microsoft.ServiceBus", "Microsoft.Storage", "Microsoft.DBforPostgreSQL", "Microsoft.Cdn", "Microsoft.Network"} {
			values = append(values, one(ns))
		}
		writeJSON(w, http.StatusOK, map[string]any{"value": values})
		return
	}
	writeJSON(w, http.StatusOK, one(p.Namespace))
}
