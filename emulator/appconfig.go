package emulator

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
)

// Azure App Configuration's data plane (https://{store}.azconfig.io/kv...), as its REST API documents it
// (api-version 1.0 and 2023-11-01): list key-values (GET /kv with the key= and label= filters), get one
// (GET /kv/{key}?label=), and set one (PUT /kv/{key}?label=, for seeding a store as `az appconfig kv set` does).
//
// A store's data plane is the store's host name under AppConfigDNSSuffix, served by the emulator's HTTPS server
// (its certificate names *.azconfig.io), reached like Key Vault's (KeyVaultHTTPClient, the login proxy). The store
// must exist as a Microsoft.AppConfiguration/configurationStores resource created through ARM, whose
// properties.endpoint reads https://{store}.azconfig.io; its key-values live in memory only (like Key Vault keys,
// they are not written to the data file).
//
// Authentication is Entra ID only (the stores' access keys, HMAC-SHA256, are refused): a token the emulator issued
// for https://azconfig.io (or the store's own endpoint). Authorisation is RBAC on the store's data actions, as
// Key Vault's with RBAC: App Configuration Data Reader reads, App Configuration Data Owner reads and writes, through
// a role assignment on the store or a scope above it.
//
// Filters follow the REST reference: key= is one key, up to five keys separated by commas, or a prefix ending in
// '*' ('*' alone or omitted: every key); label= likewise, where \0 (URL-encoded %00, or the two characters "\0")
// stands for "no label" and an omitted filter matches every label; '*', ',' and '\' are escaped with '\'. A list
// answers at most AppConfigPageSize items; the next page's link is in the Link header (rel="next") and, from
// 2023-11-01, in the body's @nextLink.

// AppConfigDNSSuffix is the DNS suffix of the stores the emulator serves (Azure's public cloud suffix).
const AppConfigDNSSuffix = "azconfig.io"

// AppConfigAudience is the token audience App Configuration's data plane accepts.
const AppConfigAudience = "https://" + AppConfigDNSSuffix

// AppConfigKeyVaultRefContentType is the content type of a key-value that refers to a Key Vault secret.
const AppConfigKeyVaultRefContentType = "application/vnd.microsoft.appconfig.keyvaultref+json;charset=utf-8"

// AppConfigPageSize is the most items one list response holds.
const AppConfigPageSize = 100

const appConfigTypeKey = "microsoft.appconfiguration/configurationstores"

// The App Configuration data roles, under their real GUIDs and with their real dataActions.
var appConfigRoles = []RoleDefinition{
	{GUID: "5ae67dd6-50cb-40e7-96ff-dc2bfa4b606b", RoleName: "App Configuration Data Owner", Description: "Allows full access to App Configuration data.",
		Permissions: []Permission{{DataActions: []string{"Microsoft.AppConfiguration/configurationStores/*/read", "Microsoft.AppConfiguration/configurationStores/*/write", "Microsoft.AppConfiguration/configurationStores/*/delete", "Microsoft.AppConfiguration/configurationStores/*/action"}}}},
	{GUID: "516239f1-63e1-4d78-a4de-a74fb236a071", RoleName: "App Configuration Data Reader", Description: "Allows read access to App Configuration data.",
		Permissions: []Permission{{DataActions: []string{"Microsoft.AppConfiguration/configurationStores/*/read"}}}},
}

// The App Configuration roles join the built-in roles before rbac.go's init indexes them.
var _ = func() bool {
	builtinRoles = append(builtinRoles, appConfigRoles...)
	return true
}()

func init() {
	typeDefaults[appConfigTypeKey] = append(typeDefaults[appConfigTypeKey],
		fieldDefault{"properties.endpoint", "https://{name}." + AppConfigDNSSuffix})
}

// AppConfigKeyValue is a key-value of a store (PutAppConfigKeyValue).
type AppConfigKeyValue struct {
	Key         string
	Label       string // "" is no label
	Value       string
	ContentType string
	Tags        map[string]string
	Locked      bool
}

// acKV is a stored key-value.
type acKV struct {
	AppConfigKeyValue
	etag     string
	modified time.Time
}

// sortKey orders key-values by key, then label (no label first); it is also the paging cursor.
func (kv *acKV) sortKey() string { return kv.Key + "\x00" + kv.Label }

func (kv *acKV) json() map[string]any {
	var label, ct any
	if kv.Label != "" {
		label = kv.Label
	}
	if kv.ContentType != "" {
		ct = kv.ContentType
	}
	tags := map[string]string{}
	for k, v := range kv.Tags {
		tags[k] = v
	}
	return map[string]any{"etag": kv.etag, "key": kv.Key, "label": label, "content_type": ct, "value": kv.Value,
		"tags": tags, "locked": kv.Locked, "last_modified": kv.modified.UTC().Format(time.RFC3339)}
}

// acStore holds the key-values of every store: store name (lower-cased) → sort key → key-value.
type acStore struct {
	mu sync.Mutex
	m  map[string]map[string]*acKV
}

var (
	acStoresMu sync.Mutex
	acStores   = map[*Emulator]*acStore{}
)

// appConfigData returns the emulator's key-values (created on first use, dropped when the emulator closes).
func (e *Emulator) appConfigData() *acStore {
	acStoresMu.Lock()
	defer acStoresMu.Unlock()
	s := acStores[e]
	if s == nil {
		s = &acStore{m: map[string]map[string]*acKV{}}
		acStores[e] = s
		go func() {
			<-e.done
			acStoresMu.Lock()
			delete(acStores, e)
			acStoresMu.Unlock()
		}()
	}
	return s
}

func (s *acStore) put(store string, kv AppConfigKeyValue) *acKV {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.m[store]
	if m == nil {
		m = map[string]*acKV{}
		s.m[store] = m
	}
	v := &acKV{AppConfigKeyValue: kv, etag: strings.ReplaceAll(newUUID(), "-", ""), modified: nowUTC()}
	m[v.sortKey()] = v
	return v
}

func (s *acStore) get(store, key, label string) *acKV {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[store][key+"\x00"+label]
}

// list returns the key-values matching the filters after the cursor, at most n of them, and whether more follow.
func (s *acStore) list(store string, keys, labels acFilter, after string, n int) ([]*acKV, bool) {
	s.mu.Lock()
	all := make([]*acKV, 0, len(s.m[store]))
	for _, kv := range s.m[store] {
		if kv.sortKey() > after && keys.match(kv.Key, false) && labels.match(kv.Label, true) {
			all = append(all, kv)
		}
	}
	s.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].sortKey() < all[j].sortKey() })
	if len(all) > n {
		return all[:n], true
	}
	return all, false
}

// acFilter is a parsed key= or label= filter: any, a prefix, or up to five exact values ("\x00" is no label).
type acFilter struct {
	any    bool
	prefix string
	exact  []string
}

func (f acFilter) match(s string, label bool) bool {
	switch {
	case f.any:
		return true
	case f.exact == nil:
		return strings.HasPrefix(s, f.prefix) && (!label || s != "" || f.prefix == "")
	}
	for _, x := range f.exact {
		if x == s || label && x == "\x00" && s == "" {
			return true
		}
	}
	return false
}

// parseACFilter reads a filter as the REST API documents it.
func parseACFilter(raw string, present, label bool) (acFilter, error) {
	if !present || raw == "*" {
		return acFilter{any: true}, nil
	}
	var parts []string
	var cur strings.Builder
	wild := false
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw) && raw[i+1] == '0' && label:
			cur.WriteByte(0)
			i++
		case c == '\\' && i+1 < len(raw):
			cur.WriteByte(raw[i+1])
			i++
		case c == '\\':
			return acFilter{}, fmt.Errorf("a trailing '\\' escapes nothing")
		case c == ',':
			parts = append(parts, cur.String())
			cur.Reset()
		case c == '*':
			if i != len(raw)-1 {
				return acFilter{}, fmt.Errorf("'*' is only supported at the end of a filter (escape it as '\\*')")
			}
			wild = true
		default:
			cur.WriteByte(c)
		}
	}
	parts = append(parts, cur.String())
	if wild {
		if len(parts) > 1 {
			return acFilter{}, fmt.Errorf("a wildcard cannot be combined with a list of values separated by ','")
		}
		return acFilter{prefix: parts[0]}, nil
	}
	if len(parts) > 5 {
		return acFilter{}, fmt.Errorf("at most 5 values separated by ',' are supported")
	}
	return acFilter{exact: parts}, nil
}

// AppConfigURL returns the data-plane endpoint of a store ("https://{name}.azconfig.io"), as properties.endpoint reads.
func (e *Emulator) AppConfigURL(name string) string {
	return "https://" + strings.ToLower(name) + "." + AppConfigDNSSuffix
}

// PutAppConfigKeyValue sets a key-value of a store created through ARM, as PUT /kv/{key} does (for tests and seeding).
func (e *Emulator) PutAppConfigKeyValue(store string, kv AppConfigKeyValue) error {
	if e.findAppConfigStore(store) == nil {
		return fmt.Errorf("the App Configuration store %q does not exist (create it through ARM first)", store)
	}
	if err := validACKey(kv.Key); err != nil {
		return err
	}
	e.appConfigData().put(strings.ToLower(store), kv)
	return nil
}

func validACKey(k string) error {
	if k == "" || k == "." || k == ".." || strings.Contains(k, "%") {
		return fmt.Errorf("key %q is not a valid App Configuration key (not empty, '.' or '..', no '%%')", k)
	}
	return nil
}

// isAppConfigHost reports whether host is a store's data-plane host.
func isAppConfigHost(host string) bool {
	_, ok := appConfigNameOf(host)
	return ok
}

// appConfigNameOf returns the store name of a data-plane host ("cfg1.azconfig.io:443" → "cfg1").
func appConfigNameOf(host string) (string, bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	name, ok := strings.CutSuffix(host, "."+AppConfigDNSSuffix)
	if !ok || name == "" || strings.Contains(name, ".") {
		return "", false
	}
	return name, true
}

// findAppConfigStore returns the store resource of a name (store names are global).
func (e *Emulator) findAppConfigStore(name string) *resource {
	e.mu.RLock()
	defer e.mu.RUnlock()
	for _, r := range e.store.ofType(appConfigTypeKey, "") {
		if strings.EqualFold(r.Name, name) {
			return r
		}
	}
	return nil
}

// acProblem writes App Configuration's error body (RFC 7807 problem details).
func acProblem(w http.ResponseWriter, status int, typ, title, detail string) {
	w.Header().Set("Content-Type", "application/problem+json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "https://azconfig.io/errors/" + typ, "title": title, "detail": detail, "status": status})
}

// appConfigAPIVersions are the data-plane API versions the emulator serves.
var appConfigAPIVersions = map[string]bool{"1.0": true, "2023-10-01": true, "2023-11-01": true}

// serveAppConfigData serves a store's data plane (the request's host is a store host).
func (e *Emulator) serveAppConfigData(w http.ResponseWriter, r *http.Request, info *reqInfo) {
	info.typ = "appconfig"
	name, _ := appConfigNameOf(r.Host)
	q := r.URL.Query()
	apiVersion := q.Get("api-version")
	if !appConfigAPIVersions[apiVersion] {
		info.code = "InvalidApiVersion"
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'api-version'",
			fmt.Sprintf("The api-version %q is not supported: use 1.0 or 2023-11-01.", apiVersion))
		return
	}
	claims, ok := e.acAuthenticate(w, r, name, info)
	if !ok {
		return
	}
	store := e.findAppConfigStore(name)
	if store == nil {
		// Real App Configuration: the host does not resolve. The emulator answers as a gateway would.
		info.code = "StoreNotFound"
		acProblem(w, http.StatusNotFound, "store-not-found", "Store not found", fmt.Sprintf("The App Configuration store '%s' does not exist.", name))
		return
	}
	switch {
	case r.URL.Path == "/kv" && r.Method == http.MethodGet:
		if e.acAllowed(w, claims, store, "Microsoft.AppConfiguration/configurationStores/keyValues/read", info) {
			e.acList(w, r, store, apiVersion)
		}
	case strings.HasPrefix(r.URL.Path, "/kv/") && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		if e.acAllowed(w, claims, store, "Microsoft.AppConfiguration/configurationStores/keyValues/read", info) {
			e.acGet(w, r, store)
		}
	case strings.HasPrefix(r.URL.Path, "/kv/") && r.Method == http.MethodPut:
		if e.acAllowed(w, claims, store, "Microsoft.AppConfiguration/configurationStores/keyValues/write", info) {
			e.acPut(w, r, store)
		}
	default:
		acProblem(w, http.StatusNotFound, "not-found", "Not found", "The emulator does not serve "+r.Method+" "+r.URL.Path+" of App Configuration.")
	}
}

// acAuthenticate checks the bearer token: the emulator's, unexpired, of its tenant, for https://azconfig.io or the
// store's endpoint. A request without one (or with an access key's HMAC signature) answers 401.
func (e *Emulator) acAuthenticate(w http.ResponseWriter, r *http.Request, store string, info *reqInfo) (*accessClaims, bool) {
	fail := func(desc string) (*accessClaims, bool) {
		info.code = "Unauthorized"
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s.%s", error="invalid_token", error_description="%s"`, store, AppConfigDNSSuffix, desc))
		acProblem(w, http.StatusUnauthorized, "unauthorized", "Unauthorized", desc)
		return nil, false
	}
	h := r.Header.Get("Authorization")
	scheme, tok, _ := strings.Cut(h, " ")
	switch {
	case h == "":
		return fail("The access token is missing")
	case strings.EqualFold(scheme, "HMAC-SHA256"):
		return fail("The emulator accepts Entra ID tokens only, not access keys (HMAC-SHA256)")
	case !strings.EqualFold(scheme, "Bearer") || tok == "":
		return fail("Unable to parse the Authorization header")
	}
	c := e.tcache.get(tok)
	if c == nil {
		c = &accessClaims{}
		if err := e.tokens.verify(tok, c); err != nil || c.Iss != e.issuer(c.Tid) {
			return fail("Invalid issuer or signature")
		}
		e.tcache.put(tok, c)
	}
	if c.Exp <= time.Now().Unix() {
		return fail("The access token has expired")
	}
	if aud := strings.TrimSuffix(c.Aud, "/"); aud != AppConfigAudience && !strings.EqualFold(aud, e.AppConfigURL(store)) {
		return fail(fmt.Sprintf("Invalid audience %s: the token must be for %s", c.Aud, AppConfigAudience))
	}
	if !strings.EqualFold(c.Tid, e.tenantID) {
		return fail("The access token is from a different tenant")
	}
	info.principal = c.Oid
	return c, true
}

// acAllowed checks the caller's right to a data action on the store and writes the 403.
func (e *Emulator) acAllowed(w http.ResponseWriter, c *accessClaims, store *resource, action string, info *reqInfo) bool {
	if e.dataActionAllowed(c.Oid, action, store.key) {
		return true
	}
	info.code = "Forbidden"
	acProblem(w, http.StatusForbidden, "forbidden", "Forbidden", fmt.Sprintf(
		"The principal %s is not authorized to perform action '%s' on store '%s': it needs App Configuration Data Reader or Data Owner on the store or a scope above it.",
		c.Oid, action, store.Name))
	return false
}

// acKeyOf returns the key of a /kv/{key} path.
func acKeyOf(r *http.Request) (string, error) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), "/kv/")
	k, err := url.PathUnescape(raw)
	if err != nil {
		return "", err
	}
	return k, validACKey(k)
}

// acLabelOf returns the label= of a single key-value request ("" and \0 are no label; wildcards are refused).
func acLabelOf(q url.Values) (string, error) {
	l := q.Get("label")
	if l == "\x00" || l == `\0` {
		return "", nil
	}
	if strings.ContainsAny(l, "*,") {
		return "", fmt.Errorf("label %q: a single key-value takes one label, no wildcard or list", l)
	}
	return l, nil
}

func (e *Emulator) acGet(w http.ResponseWriter, r *http.Request, store *resource) {
	key, err := acKeyOf(r)
	if err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'key'", err.Error())
		return
	}
	label, err := acLabelOf(r.URL.Query())
	if err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'label'", err.Error())
		return
	}
	kv := e.appConfigData().get(strings.ToLower(store.Name), key, label)
	if kv == nil {
		acProblem(w, http.StatusNotFound, "key-value-not-found", "Key-value not found", fmt.Sprintf("The key-value %q (label %q) does not exist.", key, label))
		return
	}
	if inm := r.Header.Get("If-None-Match"); inm != "" && strings.Trim(inm, `"`) == kv.etag {
		w.Header().Set("ETag", `"`+kv.etag+`"`)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	acWriteKV(w, http.StatusOK, kv)
}

func acWriteKV(w http.ResponseWriter, status int, kv *acKV) {
	w.Header().Set("Content-Type", "application/vnd.microsoft.appconfig.kv+json; charset=utf-8")
	w.Header().Set("ETag", `"`+kv.etag+`"`)
	w.Header().Set("Last-Modified", kv.modified.UTC().Format(http.TimeFormat))
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(kv.json())
}

func (e *Emulator) acPut(w http.ResponseWriter, r *http.Request, store *resource) {
	key, err := acKeyOf(r)
	if err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'key'", err.Error())
		return
	}
	label, err := acLabelOf(r.URL.Query())
	if err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'label'", err.Error())
		return
	}
	var body struct {
		Value       string            `json:"value"`
		ContentType string            `json:"content_type"`
		Tags        map[string]string `json:"tags"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 10<<20)).Decode(&body); err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request body", "The body is not a key-value: "+err.Error())
		return
	}
	data := e.appConfigData()
	storeName := strings.ToLower(store.Name)
	cur := data.get(storeName, key, label)
	if cur != nil && cur.Locked {
		acProblem(w, http.StatusConflict, "key-locked", "Modifing key '"+key+"' is not allowed", "The key is read-only. To allow modification unlock it first.")
		return
	}
	if im := r.Header.Get("If-Match"); im != "" && (cur == nil || im != "*" && strings.Trim(im, `"`) != cur.etag) {
		w.WriteHeader(http.StatusPreconditionFailed)
		return
	}
	if r.Header.Get("If-None-Match") == "*" && cur != nil {
		w.WriteHeader(http.StatusPreconditionFailed)
		return
	}
	kv := data.put(storeName, AppConfigKeyValue{Key: key, Label: label, Value: body.Value, ContentType: body.ContentType, Tags: body.Tags})
	acWriteKV(w, http.StatusOK, kv)
}

func (e *Emulator) acList(w http.ResponseWriter, r *http.Request, store *resource, apiVersion string) {
	q := r.URL.Query()
	keys, err := parseACFilter(q.Get("key"), q.Has("key"), false)
	if err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'key'", err.Error())
		return
	}
	labels, err := parseACFilter(q.Get("label"), q.Has("label"), true)
	if err != nil {
		acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'label'", err.Error())
		return
	}
	after := ""
	if a := q.Get("after"); a != "" {
		b, err := base64.RawURLEncoding.DecodeString(a)
		if err != nil {
			acProblem(w, http.StatusBadRequest, "invalid-argument", "Invalid request parameter 'after'", "The paging token is not valid.")
			return
		}
		after = string(b)
	}
	items, more := e.appConfigData().list(strings.ToLower(store.Name), keys, labels, after, AppConfigPageSize)
	out := make([]any, len(items))
	for i, kv := range items {
		out[i] = kv.json()
	}
	body := map[string]any{"items": out}
	if more {
		nq := url.Values{}
		for k, v := range q {
			if k != "after" {
				nq[k] = v
			}
		}
		nq.Set("after", base64.RawURLEncoding.EncodeToString([]byte(items[len(items)-1].sortKey())))
		next := "/kv?" + nq.Encode()
		w.Header().Set("Link", "<"+next+`>; rel="next"`)
		if apiVersion != "1.0" {
			body["@nextLink"] = next
		}
	}
	w.Header().Set("Content-Type", "application/vnd.microsoft.appconfig.kvset+json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(body)
}
