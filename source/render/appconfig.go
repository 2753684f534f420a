package render

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// Azure App Configuration as a substitution source.
//
// A platform keeps its variables (platform-vars) in App Configuration and writes them into its cluster as a
// ConfigMap (the App Configuration Kubernetes provider does it), where Flux's substituteFrom reads them. Without a
// cluster, gitaso reads the store itself: an AppConfigSource maps the ConfigMap (or Secret) namespace/name that
// substituteFrom (or --substitute-from) names to a store, and every render reads the store's key-values with
// gitaso's own Azure credential (a token for https://azconfig.io; the identity needs App Configuration Data Reader
// on the store).
//
// What becomes a variable, as the Kubernetes provider writes a ConfigMap:
//   - the key-values the key filter selects (REST syntax: "*" every key, "platform/*" a prefix, "A,B" up to five
//     keys), of the labels given, in order: a later label's value overrides an earlier one's for the same key;
//     the default label is "no label" (\0), as the providers' default;
//   - the variable's name is the key, less the first of the trim prefixes it starts with; a name that is not a
//     valid variable name (letters, digits and '_', not starting with a digit, as Flux requires of a ConfigMap's
//     keys) is an error naming the store and the key: select and trim so that only variables remain (no separator
//     is rewritten: "platform:ACR_NAME" is not ACR_NAME unless "platform:" is trimmed);
//   - feature flags (.appconfig.featureflag/...) are skipped;
//   - a Key Vault reference (content type application/vnd.microsoft.appconfig.keyvaultref+json) is resolved
//     through Key Vault's data plane with the same credential (Key Vault Secrets User on the vault) and its value
//     is secret: masked in plans, logs, the API and the state like a value from a Secret. A source mapped as a
//     Secret makes every value secret.
//
// The store is read in place of the repository and the cluster: a ConfigMap of the same name in the files is not
// read. A store that cannot be read (unreachable, 401/403, a Key Vault reference that does not resolve, a key that
// is no variable name) is an error naming the store and the substituteFrom; it lies outside the commit
// (source.ErrUnavailable), so nothing is refused for it: the Flux Kustomization reading the store fails alone
// (ArtifactFailed) and is rendered again without a new commit, when a role assignment or a fixed key-value may have
// made the store readable; through --substitute-from without Flux, the revision waits for the next poll.

// DefaultAppConfigDNSSuffix is App Configuration's DNS suffix in Azure's public cloud.
const DefaultAppConfigDNSSuffix = "azconfig.io"

// Content types App Configuration gives key-values.
const (
	appConfigKeyVaultRefType  = "application/vnd.microsoft.appconfig.keyvaultref+json"
	appConfigFeatureFlagType  = "application/vnd.microsoft.appconfig.ff+json"
	appConfigFeatureFlagPrefx = ".appconfig.featureflag/"
	appConfigAPIVersion       = "1.0"
	appConfigMaxPages         = 1000
)

// AppConfigSource maps a substitution source (a ConfigMap or Secret that substituteFrom names) to key-values of
// an App Configuration store. ParseAppConfigSource reads its flag syntax.
type AppConfigSource struct {
	Ref      Ref      // the ConfigMap or Secret it stands for (Kind "": either)
	Endpoint string   // https://{store}.azconfig.io
	Key      string   // key filter in App Configuration's syntax; "" is every key
	Labels   []string // labels in order (a later one overrides); "" is no label; nil is no label only
	Trim     []string // prefixes trimmed from keys (the first that matches)
}

// String renders the source in the syntax ParseAppConfigSource reads.
func (s AppConfigSource) String() string {
	q := url.Values{}
	if s.Key != "" {
		q.Set("key", s.Key)
	}
	if len(s.Labels) > 0 {
		ls := make([]string, len(s.Labels))
		for i, l := range s.Labels {
			if ls[i] = l; l == "" {
				ls[i] = `\0`
			}
		}
		q.Set("label", strings.Join(ls, ","))
	}
	for _, t := range s.Trim {
		q.Add("trim", t)
	}
	ref := s.Ref
	ref.Optional = false
	out := ref.String() + "=" + s.Endpoint
	if len(q) > 0 {
		// Readable: these characters need no escape in a query value.
		out += "?" + strings.NewReplacer("%5C", `\`, "%2C", ",", "%2A", "*", "%2F", "/", "%3A", ":").Replace(q.Encode())
	}
	return out
}

// ParseAppConfigSource reads "[ConfigMap/|Secret/]namespace/name=https://{store}.azconfig.io[?key=FILTER]
// [&label=LABEL[,LABEL...]][&trim=PREFIX...]", e.g.
// "flux-system/platform-vars=https://platform.azconfig.io?label=prod" or
// "flux-system/platform-vars=https://platform.azconfig.io?key=platform/*&trim=platform/&label=\0,prod".
// A label \0 (or an empty one) is no label; labels are exact (no wildcard): each key takes one value.
func ParseAppConfigSource(s string) (AppConfigSource, error) {
	var out AppConfigSource
	refText, raw, ok := strings.Cut(strings.TrimSpace(s), "=")
	if !ok {
		return out, fmt.Errorf("app-config %q: want [ConfigMap/|Secret/]namespace/name=https://{store}.azconfig.io[?key=…&label=…&trim=…]", s)
	}
	ref, err := ParseRef(refText)
	if err != nil {
		return out, fmt.Errorf("app-config %q: %w", s, err)
	}
	if ref.Optional {
		return out, fmt.Errorf("app-config %q: ',optional' belongs to the substituteFrom, not to the store", s)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.Fragment != "" {
		return out, fmt.Errorf("app-config %q: %q is not a store endpoint (https://{store}.azconfig.io)", s, raw)
	}
	out.Ref, out.Endpoint = ref, "https://"+strings.ToLower(u.Host)
	q := u.Query()
	for k := range q {
		if k != "key" && k != "label" && k != "trim" {
			return out, fmt.Errorf("app-config %q: unknown parameter %q (key, label, trim)", s, k)
		}
	}
	if len(q["key"]) > 1 || len(q["label"]) > 1 {
		return out, fmt.Errorf("app-config %q: key and label are given once (label takes a list: label=\\0,prod)", s)
	}
	out.Key = q.Get("key")
	if q.Has("label") {
		for l := range strings.SplitSeq(q.Get("label"), ",") {
			if l == `\0` || l == "\x00" {
				l = ""
			}
			if strings.ContainsAny(l, "*") {
				return out, fmt.Errorf("app-config %q: label %q: labels are exact (a wildcard would give a key several values)", s, l)
			}
			out.Labels = append(out.Labels, l)
		}
	}
	out.Trim = q["trim"]
	return out, nil
}

// AppConfigOptions configure NewAppConfig.
type AppConfigOptions struct {
	// Credential returns gitaso's Azure credential; it is called on the first read only.
	Credential func() (azcore.TokenCredential, error)
	// HTTPClient sends the requests (nil: http.DefaultClient); the cloud's CA is in its TLS roots.
	HTTPClient *http.Client
	// DNSSuffix is the cloud's App Configuration DNS suffix ("" is DefaultAppConfigDNSSuffix; azconfig.azure.cn,
	// azconfig.azure.us in the national clouds). Stores must lie under it and the token is for https://{DNSSuffix}.
	DNSSuffix string
	// KeyVaultDNSSuffix is the cloud's Key Vault DNS suffix ("" is DefaultKeyVaultDNSSuffix): Key Vault
	// references to vaults elsewhere are refused, so that gitaso's token never leaves the cloud.
	KeyVaultDNSSuffix string
}

// AppConfig reads substitution sources from App Configuration stores. It is safe for concurrent use.
type AppConfig struct {
	opts    AppConfigOptions
	sources []AppConfigSource

	mu     sync.Mutex
	ac, kv *runtime.Pipeline
	err    error
}

// NewAppConfig checks the sources (their stores must lie under the DNS suffix; one source per ConfigMap or
// Secret) and returns their reader.
func NewAppConfig(sources []AppConfigSource, o AppConfigOptions) (*AppConfig, error) {
	if o.DNSSuffix == "" {
		o.DNSSuffix = DefaultAppConfigDNSSuffix
	}
	if o.KeyVaultDNSSuffix == "" {
		o.KeyVaultDNSSuffix = DefaultKeyVaultDNSSuffix
	}
	o.DNSSuffix = strings.ToLower(strings.Trim(o.DNSSuffix, "."))
	o.KeyVaultDNSSuffix = strings.ToLower(strings.Trim(o.KeyVaultDNSSuffix, "."))
	for i, s := range sources {
		host := strings.TrimPrefix(s.Endpoint, "https://")
		if name, ok := strings.CutSuffix(host, "."+o.DNSSuffix); !ok || name == "" || strings.Contains(name, ".") {
			return nil, fmt.Errorf("app-config %s: %s is not under this cloud's App Configuration DNS suffix %s: gitaso sends its Azure token to %s stores only", s, s.Endpoint, o.DNSSuffix, o.DNSSuffix)
		}
		for _, o := range sources[:i] {
			if o.Ref.ns() == s.Ref.ns() && o.Ref.Name == s.Ref.Name && (o.Ref.Kind == "" || s.Ref.Kind == "" || o.Ref.Kind == s.Ref.Kind) {
				return nil, fmt.Errorf("app-config %s: %s/%s is mapped twice (also %s)", s, s.Ref.ns(), s.Ref.Name, o)
			}
		}
	}
	return &AppConfig{opts: o, sources: slices.Clone(sources)}, nil
}

// source returns the source r names: same namespace and name, and a kind that agrees.
func (a *AppConfig) source(r Ref) (AppConfigSource, bool) {
	if a == nil {
		return AppConfigSource{}, false
	}
	for _, s := range a.sources {
		if s.Ref.ns() == r.ns() && s.Ref.Name == r.Name && (s.Ref.Kind == "" || r.Kind == "" || s.Ref.Kind == r.Kind) {
			return s, true
		}
	}
	return AppConfigSource{}, false
}

// pipelines builds the App Configuration and Key Vault pipelines on first use (the credential is read then).
func (a *AppConfig) pipelines() (ac, kv runtime.Pipeline, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return runtime.Pipeline{}, runtime.Pipeline{}, a.err
	}
	if a.ac != nil {
		return *a.ac, *a.kv, nil
	}
	if a.opts.Credential == nil {
		a.err = errors.New("no Azure credential is configured")
		return runtime.Pipeline{}, runtime.Pipeline{}, a.err
	}
	cred, err := a.opts.Credential()
	if err != nil {
		a.err = fmt.Errorf("sign in: %w", err)
		return runtime.Pipeline{}, runtime.Pipeline{}, a.err
	}
	mk := func(resource string) *runtime.Pipeline {
		co := &policy.ClientOptions{
			PerRetryPolicies: []policy.Policy{runtime.NewBearerTokenPolicy(cred, []string{"https://" + resource + "/.default"}, nil)},
			Retry:            policy.RetryOptions{MaxRetries: 3},
		}
		if a.opts.HTTPClient != nil {
			co.Transport = a.opts.HTTPClient
		}
		pl := runtime.NewPipeline("gitaso-appconfig", "v1", runtime.PipelineOptions{}, co)
		return &pl
	}
	a.ac, a.kv = mk(a.opts.DNSSuffix), mk(a.opts.KeyVaultDNSSuffix)
	return *a.ac, *a.kv, nil
}

// storeVars are the variables read from a store for one substituteFrom.
type storeVars struct {
	vars   map[string]string
	secret map[string]string // variable → where its secret value came from (manifest.SecretValue.From)
	src    AppConfigSource
}

// read returns the variables of source s.
func (a *AppConfig) read(ctx context.Context, s AppConfigSource) (*storeVars, error) {
	acp, kvp, err := a.pipelines()
	if err != nil {
		return nil, err
	}
	labels := s.Labels
	if len(labels) == 0 {
		labels = []string{""}
	}
	out := &storeVars{vars: map[string]string{}, secret: map[string]string{}, src: s}
	for _, label := range labels {
		items, err := a.list(ctx, acp, s, label)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			ct := strings.ToLower(it.ContentType)
			if strings.HasPrefix(it.Key, appConfigFeatureFlagPrefx) || strings.HasPrefix(ct, appConfigFeatureFlagType) {
				continue
			}
			name := it.Key
			for _, p := range s.Trim {
				if t, ok := strings.CutPrefix(name, p); ok {
					name = t
					break
				}
			}
			if !ValidName(name) {
				return nil, fmt.Errorf("key %q (label %s) is not a valid variable name (letters, digits and '_', not starting with a digit; Flux refuses such a ConfigMap key too): narrow the key filter or trim its prefix (key=, trim=)", it.Key, labelText(label))
			}
			value, from := it.Value, ""
			if strings.HasPrefix(ct, appConfigKeyVaultRefType) {
				v, vault, err := a.resolveKeyVaultRef(ctx, kvp, it.Value)
				if err != nil {
					return nil, fmt.Errorf("key %q (label %s): Key Vault reference: %w", it.Key, labelText(label), err)
				}
				value, from = v, "Key Vault secret "+vault
			} else if s.Ref.Kind == "Secret" {
				from = "Secret " + s.Ref.ns() + "/" + s.Ref.Name
			}
			out.vars[name] = cleanValue(value)
			if from != "" {
				out.secret[name] = from
			} else {
				delete(out.secret, name)
			}
		}
	}
	return out, nil
}

func labelText(l string) string {
	if l == "" {
		return `\0 (no label)`
	}
	return strconv.Quote(l)
}

// acItem is a key-value as App Configuration's REST API answers it.
type acItem struct {
	Key         string  `json:"key"`
	Label       *string `json:"label"`
	ContentType string  `json:"content_type"`
	Value       string  `json:"value"`
}

// escapeACLabel escapes a label for the label= filter ("" is no label, \0).
func escapeACLabel(l string) string {
	if l == "" {
		return "\x00"
	}
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `,`, `\,`)
	return r.Replace(l)
}

// list reads every key-value of one label that the key filter selects, following the Link headers.
func (a *AppConfig) list(ctx context.Context, pl runtime.Pipeline, s AppConfigSource, label string) ([]acItem, error) {
	q := url.Values{}
	q.Set("api-version", appConfigAPIVersion)
	if s.Key != "" {
		q.Set("key", s.Key)
	}
	q.Set("label", escapeACLabel(label))
	next := s.Endpoint + "/kv?" + q.Encode()
	var out []acItem
	for page := 0; next != ""; page++ {
		if page == appConfigMaxPages {
			return nil, fmt.Errorf("more than %d pages of key-values: narrow the key filter", appConfigMaxPages)
		}
		body, h, err := a.get(ctx, pl, next, "application/vnd.microsoft.appconfig.kvset+json")
		if err != nil {
			return nil, err
		}
		var res struct {
			Items []acItem `json:"items"`
		}
		if err := json.Unmarshal(body, &res); err != nil {
			return nil, fmt.Errorf("list key-values: the answer is not a key-value set: %w", err)
		}
		out = append(out, res.Items...)
		if next, err = nextLink(s.Endpoint, h.Get("Link")); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nextLink returns the absolute URL of a Link header's rel="next" ("" when there is none). It must stay on the
// store's endpoint, so that the token goes nowhere else.
func nextLink(endpoint, link string) (string, error) {
	for part := range strings.SplitSeq(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		target = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(target), "<"), ">")
		base, _ := url.Parse(endpoint + "/")
		u, err := base.Parse(target)
		if err != nil || "https://"+strings.ToLower(u.Host) != endpoint {
			return "", fmt.Errorf("list key-values: the next page's link %q leaves the store", target)
		}
		return u.String(), nil
	}
	return "", nil
}

// get sends a GET and returns the body of a 200, or an error with the service's message.
func (a *AppConfig) get(ctx context.Context, pl runtime.Pipeline, rawURL, accept string) ([]byte, http.Header, error) {
	req, err := runtime.NewRequest(ctx, http.MethodGet, rawURL)
	if err != nil {
		return nil, nil, err
	}
	req.Raw().Header.Set("Accept", accept)
	resp, err := pl.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("GET %s: %s%s", redactQuery(rawURL), resp.Status, serviceMessage(body))
	}
	return body, resp.Header, nil
}

// redactQuery drops the query of a URL for messages (a paging token says nothing).
func redactQuery(u string) string {
	p, _, _ := strings.Cut(u, "?")
	return p
}

// serviceMessage reads App Configuration's problem details or Key Vault's error body.
func serviceMessage(body []byte) string {
	var e struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Error  struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	msg := strings.TrimSpace(strings.Join([]string{e.Error.Code, e.Error.Message, e.Title, e.Detail}, " "))
	msg = strings.Join(strings.Fields(msg), " ")
	if len(msg) > 600 {
		msg = msg[:600] + "…"
	}
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// resolveKeyVaultRef reads the secret a Key Vault reference names ({"uri":"https://{vault}.vault.azure.net/
// secrets/{name}[/{version}]"}) and returns its value and "vault/name".
func (a *AppConfig) resolveKeyVaultRef(ctx context.Context, pl runtime.Pipeline, ref string) (string, string, error) {
	var r struct {
		URI string `json:"uri"`
	}
	if err := json.Unmarshal([]byte(ref), &r); err != nil || r.URI == "" {
		return "", "", errors.New(`the value is not {"uri": "https://{vault}.vault.azure.net/secrets/{name}"}`)
	}
	u, err := url.Parse(r.URI)
	if err != nil || u.Scheme != "https" || u.User != nil || u.RawQuery != "" {
		return "", "", fmt.Errorf("uri %q is not a Key Vault secret URL", r.URI)
	}
	host := strings.ToLower(u.Hostname())
	vault, ok := strings.CutSuffix(host, "."+a.opts.KeyVaultDNSSuffix)
	if !ok || vault == "" || strings.Contains(vault, ".") {
		return "", "", fmt.Errorf("uri %q is not under this cloud's Key Vault DNS suffix %s: gitaso sends its Azure token to %s vaults only", r.URI, a.opts.KeyVaultDNSSuffix, a.opts.KeyVaultDNSSuffix)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "secrets" || parts[1] == "" {
		return "", "", fmt.Errorf("uri %q is not a Key Vault secret URL (…/secrets/{name}[/{version}])", r.URI)
	}
	endpoint := "https://" + u.Host + "/" + strings.Join(parts, "/") + "?api-version=7.4"
	body, _, err := a.get(ctx, pl, endpoint, "application/json")
	if err != nil {
		return "", "", err
	}
	var s struct {
		Value *string `json:"value"`
	}
	if err := json.Unmarshal(body, &s); err != nil || s.Value == nil {
		return "", "", errors.New("the answer of Key Vault holds no secret value")
	}
	return *s.Value, vault + "/" + parts[1], nil
}

// storeLookup returns the variables of a ref mapped to a store (ok false: not mapped) or the error naming the
// store and the ref; found values are read once per render and recorded in the render's external sources
// (RenderSources), so that a changed key-value makes a new revision.
type storeLookup func(r Ref) (sv *storeVars, ok bool, err *diag.Error)

// storesFor returns the lookup of Options.AppConfig for one render (nil without one), recording the values
// it reads in x (when not nil).
func (r *Renderer) storesFor(ctx context.Context, x *externals) storeLookup {
	ac := r.opts.AppConfig
	if ac == nil {
		return nil
	}
	var mu sync.Mutex
	memo := map[string]*storeResult{}
	return func(ref Ref) (*storeVars, bool, *diag.Error) {
		s, ok := ac.source(ref)
		if !ok {
			return nil, false, nil
		}
		key := s.String()
		mu.Lock()
		defer mu.Unlock()
		if res := memo[key]; res != nil {
			return res.forRef(ref), true, res.copyErr()
		}
		sv, err := ac.read(ctx, s)
		res := &storeResult{sv: sv}
		if err != nil {
			res.err = &diag.Error{Object: ref.ns() + "/" + ref.Name, Msg: fmt.Sprintf("substitute-from %s: App Configuration store %s (--app-config %s)", ref, s.Endpoint, s),
				Err: unavailable{err}}
			r.logger.DebugContext(ctx, "substitute-from: cannot read App Configuration", "substituteFrom", ref.String(), "store", s.Endpoint, "error", err)
		} else if x != nil {
			x.add(manifest.External{Kind: "AppConfiguration", User: ref.ns() + "/" + ref.Name, Name: s.Endpoint, URL: s.String(), Digest: storeDigest(sv)})
		}
		memo[key] = res
		return res.forRef(ref), true, res.copyErr()
	}
}

// storeResult is one read of a store in a render.
type storeResult struct {
	sv  *storeVars
	err *diag.Error
}

// copyErr returns a copy of the error: each substituteFrom that names the store completes its own (file, line).
func (s *storeResult) copyErr() *diag.Error {
	if s.err == nil {
		return nil
	}
	e := *s.err
	return &e
}

// forRef returns the variables as ref reads them: a substituteFrom of a Secret makes every value secret, as a
// Secret's are.
func (s *storeResult) forRef(ref Ref) *storeVars {
	if s.sv == nil || ref.Kind != "Secret" {
		return s.sv
	}
	sv := &storeVars{vars: s.sv.vars, secret: make(map[string]string, len(s.sv.vars)), src: s.sv.src}
	for k := range s.sv.vars {
		if sv.secret[k] = s.sv.secret[k]; sv.secret[k] == "" {
			sv.secret[k] = "Secret " + ref.ns() + "/" + ref.Name
		}
	}
	return sv
}

// storeDigest identifies a store's variables without keeping them (keyed like a Secret's digest when one of
// them is secret).
func storeDigest(sv *storeVars) string {
	d := make(map[string]string, len(sv.vars)+len(sv.secret))
	for k, v := range sv.vars {
		d[k] = v
	}
	for k, from := range sv.secret {
		d["\x00secret/"+k] = from
	}
	return dataDigest(d, len(sv.secret) > 0) // keyed when a value is secret
}

// lookup is l(r), or not mapped when l is nil.
func (l storeLookup) lookup(r Ref) (*storeVars, bool, *diag.Error) {
	if l == nil {
		return nil, false, nil
	}
	return l(r)
}

// setSecretFrom records that variable k's value is secret and came from from, or forgets it (from "").
func setSecretFrom(secret map[string]string, k, from string) {
	if from != "" {
		secret[k] = from
	} else {
		delete(secret, k)
	}
}
