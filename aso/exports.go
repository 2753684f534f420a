package aso

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Exports: operatorSpec.configMaps, operatorSpec.secrets and their
// expressions, as ASO writes them after a successful reconcile.
//
// The table below says, per group/Kind, which named exports come from the
// resource as ARM returned it (ASO's generated configs, read from status)
// and which need extra ARM calls (ASO's hand-written ExportKubernetesSecrets
// and ExportKubernetesConfigMaps in api/<group>/customizations), with the
// path and api-version of the SDK client ASO makes each call with (not the
// kind's). A call is made at most once per Exports and only when one of its
// values is needed.

// Export is one operatorSpec destination of a resource.
type Export struct {
	Secret bool   // operatorSpec.secrets / secretExpressions
	Source string // the export's name (e.g. principalId) or CEL expression
	Expr   bool   // Source is a CEL expression
	Name   string // config map or secret name
	Key    string // key in it; "" for an expression returning a map
}

// Applied is a resource as ARM answered for it: what the export rules read.
type Applied struct {
	Group, Version, Kind string
	ARMID                string
	AzureName            string
	// Manifest is the object as written (apiVersion, kind, metadata, spec).
	Manifest map[string]any
	// Response is ARM's answer to the PUT (or the GET of an observed
	// resource).
	Response []byte
}

// ExportValue is one value to write into a config map or secret.
type ExportValue struct {
	Secret    bool
	Name, Key string
	Value     string
}

// ExportProblem is an export that could not be computed.
type ExportProblem struct {
	Export Export
	Err    error
}

func (p *ExportProblem) Error() string {
	ex := p.Export
	if ex.Expr {
		return fmt.Sprintf("%s %s: %v", kindWord(ex.Secret), exportDest(ex.Name, ex.Key), p.Err)
	}
	return fmt.Sprintf("%s %s (%s): %v", kindWord(ex.Secret), exportDest(ex.Name, ex.Key), ex.Source, p.Err)
}

func (p *ExportProblem) Unwrap() error { return p.Err }

// ExportError is returned by Exports when some exports could not be
// computed; the values of the others are still returned. Errors of ARM
// calls are wrapped, so errors.As finds the client's error type.
type ExportError struct {
	Problems []*ExportProblem
}

func (e *ExportError) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.Error()
	}
	return strings.Join(s, "; ")
}

func (e *ExportError) Unwrap() []error {
	out := make([]error, len(e.Problems))
	for i, p := range e.Problems {
		out[i] = p
	}
	return out
}

// ErrNotExported is returned (wrapped) for an export ASO declares but does
// not write, so gitaso cannot either.
var ErrNotExported = errors.New("ASO declares this export but writes no value for it")

// kindExports describes the values a kind exports.
type kindExports struct {
	// configs are the configMaps exports read from the resource: name →
	// dotted path in ARM's resource JSON.
	configs map[string]string
	// secrets are the secrets exports read from the resource.
	secrets map[string]string
	// calls are the extra ARM calls, each giving some exports.
	calls []*exportCall
	// missing are exports the CRD declares that ASO never writes.
	missing []string
	// rawSecrets are the secrets read from the resource that ASO also hands
	// to secretExpressions (its RawSecrets); most kinds hand none.
	rawSecrets []string
}

// exportCall is one extra ARM call (or a fixed sequence of them) of a kind's
// exporter.
type exportCall struct {
	name   string // for messages: listKeys, listClusterAdminCredential, ...
	secret bool   // gives secrets (else config maps)
	names  []string
	fetch  func(ctx context.Context, arm ARM, a *Applied, doc map[string]any) (map[string]string, error)
	// raw is what secretExpressions see as secret.X when ASO's RawSecrets
	// differ from the values it writes; nil: the same.
	raw func(written map[string]string) map[string]string
}

// postCall is a POST {armID}{suffix} whose response parse maps to export names.
func postCall(suffix, apiVersion string, names []string, parse func([]byte) (map[string]string, error)) *exportCall {
	return sdkPostCall(suffix, nil, apiVersion, names, parse)
}

// sdkPostCall is postCall with the ID's segments rewritten to the casing of the SDK's
// request path (ARM is case-insensitive; this keeps recorded requests equal
// to ASO's).
func sdkPostCall(suffix string, segments map[string]string, apiVersion string, names []string, parse func([]byte) (map[string]string, error)) *exportCall {
	return &exportCall{
		name: suffix[strings.LastIndexByte(suffix, '/')+1:], secret: true, names: names,
		fetch: func(ctx context.Context, arm ARM, a *Applied, _ map[string]any) (map[string]string, error) {
			resp, err := arm.Post(ctx, sdkPath(a.ARMID, segments)+suffix, apiVersion, nil)
			if err != nil {
				return nil, err
			}
			return parse(resp)
		},
	}
}

func sdkPath(id string, segments map[string]string) string {
	if len(segments) == 0 {
		return id
	}
	parts := strings.Split(id, "/")
	for i := 1; i < len(parts); i += 2 {
		if s, ok := segments[strings.ToLower(parts[i])]; ok {
			parts[i] = s
		}
	}
	return strings.Join(parts, "/")
}

// members reads members of the response under export names:
// members("primaryKey") maps primaryKey to primaryKey, members("key1=primaryKey") maps key1 to the
// member primaryKey (a dotted path for nested members).
func members(names ...string) func([]byte) (map[string]string, error) {
	return func(b []byte) (map[string]string, error) {
		doc, err := DecodeARM(b)
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, n := range names {
			exp, member, ok := strings.Cut(n, "=")
			if !ok {
				member = exp
			}
			if s, ok := exportString(memberAt(doc, member)); ok {
				out[exp] = s
			}
		}
		return out, nil
	}
}

// storageKeyList reads a {"keys":[{"keyName":..,"value":..}]} response (storage).
func storageKeyList(b []byte) (map[string]string, error) {
	var v struct {
		Keys []struct {
			KeyName string `json:"keyName"`
			Value   string `json:"value"`
		} `json:"keys"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, k := range v.Keys {
		if k.KeyName != "" && k.Value != "" {
			out[k.KeyName] = k.Value
		}
	}
	return out, nil
}

// authRuleKeys are the secrets of a SAS authorization rule's listKeys.
var authRuleKeys = []string{"primaryKey", "primaryConnectionString", "secondaryKey", "secondaryConnectionString"}

// exportsByKind is keyed by group/Kind.
var exportsByKind = map[string]*kindExports{
	"managedidentity.azure.com/UserAssignedIdentity": {
		configs: map[string]string{"clientId": "properties.clientId", "principalId": "properties.principalId", "tenantId": "properties.tenantId"},
		secrets: map[string]string{"clientId": "properties.clientId", "principalId": "properties.principalId", "tenantId": "properties.tenantId", "subscriptionId": "$subscriptionId"},
	},
	"storage.azure.com/StorageAccount": {
		configs: storageEndpoints,
		secrets: storageEndpoints,
		calls:   []*exportCall{postCall("/listKeys", "2024-01-01", []string{"key1", "key2"}, storageKeyList)},
	},
	"servicebus.azure.com/Namespace": {
		secrets:    map[string]string{"endpoint": "properties.serviceBusEndpoint"},
		rawSecrets: []string{"endpoint"},
		calls:      []*exportCall{postCall("/AuthorizationRules/RootManageSharedAccessKey/listKeys", "2021-11-01", authRuleKeys, members(authRuleKeys...))},
	},
	"servicebus.azure.com/NamespacesAuthorizationRule": {
		calls: []*exportCall{sdkPostCall("/listKeys", map[string]string{"authorizationrules": "AuthorizationRules"}, "2021-11-01", authRuleKeys, members(authRuleKeys...))},
	},
	"servicebus.azure.com/TopicAuthorizationRule": {
		calls: []*exportCall{sdkPostCall("/ListKeys", map[string]string{"authorizationrules": "authorizationRules"}, "2021-11-01", authRuleKeys, members(authRuleKeys...))},
	},
	"servicebus.azure.com/QueueAuthorizationRule": {
		calls: []*exportCall{sdkPostCall("/ListKeys", map[string]string{"authorizationrules": "authorizationRules"}, "2021-11-01", authRuleKeys, members(authRuleKeys...))},
	},
	"eventhub.azure.com/Namespace": {
		calls: []*exportCall{postCall("/authorizationRules/RootManageSharedAccessKey/listKeys", "2024-01-01", authRuleKeys, members(authRuleKeys...))},
	},
	"eventhub.azure.com/NamespacesAuthorizationRule": {
		calls: []*exportCall{postCall("/listKeys", "2024-01-01", authRuleKeys, members(authRuleKeys...))},
	},
	"eventhub.azure.com/NamespacesEventhubsAuthorizationRule": {
		calls: []*exportCall{postCall("/listKeys", "2024-01-01", authRuleKeys, members(authRuleKeys...))},
	},
	"documentdb.azure.com/DatabaseAccount": {
		secrets: map[string]string{"documentEndpoint": "properties.documentEndpoint"},
		calls:   []*exportCall{postCall("/listKeys", "2021-10-15", cosmosKeys, members(cosmosKeys...))},
	},
	"cognitiveservices.azure.com/Account": {
		calls: []*exportCall{postCall("/listKeys", "2025-06-01", []string{"key1", "key2"}, members("key1", "key2"))},
	},
	"eventgrid.azure.com/Topic": {
		configs: map[string]string{"endpoint": "properties.endpoint"},
		calls:   []*exportCall{postCall("/listKeys", "2021-12-01", []string{"key1", "key2"}, members("key1", "key2"))},
	},
	"cache.azure.com/Redis": {
		secrets: map[string]string{"hostName": "properties.hostName", "port": "properties.port", "sslPort": "properties.sslPort"},
		calls:   []*exportCall{postCall("/listKeys", "2021-06-01", []string{"primaryKey", "secondaryKey"}, members("primaryKey", "secondaryKey"))},
	},
	"operationalinsights.azure.com/Workspace": {
		calls: []*exportCall{sdkPostCall("/sharedKeys", map[string]string{"resourcegroups": "resourcegroups"}, "2020-08-01", []string{"primarySharedKey", "secondarySharedKey"}, members("primarySharedKey", "secondarySharedKey"))},
	},
	"signalrservice.azure.com/SignalR": {
		calls: []*exportCall{postCall("/listKeys", "2023-02-01", authRuleKeys, members(authRuleKeys...))},
	},
	"apimanagement.azure.com/Subscription": {
		calls: []*exportCall{postCall("/listSecrets", "2022-08-01", []string{"primaryKey", "secondaryKey"}, members("primaryKey", "secondaryKey"))},
	},
	"dbforpostgresql.azure.com/FlexibleServer": {
		configs: map[string]string{"fullyQualifiedDomainName": "properties.fullyQualifiedDomainName"},
		secrets: map[string]string{"fullyQualifiedDomainName": "properties.fullyQualifiedDomainName"},
	},
	"dbformysql.azure.com/FlexibleServer": {
		configs: map[string]string{"fullyQualifiedDomainName": "properties.fullyQualifiedDomainName", "administratorLogin": "properties.administratorLogin"},
		secrets: map[string]string{"fullyQualifiedDomainName": "properties.fullyQualifiedDomainName"},
	},
	"dbformariadb.azure.com/Server": {
		secrets: map[string]string{"fullyQualifiedDomainName": "properties.fullyQualifiedDomainName"},
	},
	"sql.azure.com/Server": {
		configs: map[string]string{"fullyQualifiedDomainName": "properties.fullyQualifiedDomainName"},
	},
	"app.azure.com/ContainerApp": {
		configs: map[string]string{"fqdn": "properties.configuration.ingress.fqdn", "eventStreamEndpoint": "properties.eventStreamEndpoint"},
	},
	"dataprotection.azure.com/BackupVault": {
		configs: map[string]string{"principalId": "identity.principalId"},
	},
	"kubernetesconfiguration.azure.com/Extension": {
		configs: map[string]string{"principalId": "properties.aksAssignedIdentity.principalId"},
	},
	"kusto.azure.com/Cluster": {
		configs: map[string]string{"clusterPrincipalId": "identity.principalId", "clusterTenantId": "identity.tenantId"},
	},
	"insights.azure.com/Component": {
		configs: map[string]string{"connectionString": "properties.ConnectionString", "instrumentationKey": "properties.InstrumentationKey"},
	},
	"machinelearningservices.azure.com/Registry": {
		configs: map[string]string{"discoveryUrl": "properties.discoveryUrl", "mlFlowRegistryUri": "properties.mlFlowRegistryUri"},
	},
	"network.azure.com/TrafficManagerProfile": {
		configs: map[string]string{"dnsConfigFqdn": "properties.dnsConfig.fqdn"},
	},
	"network.azure.com/PrivateLinkService": {
		configs: map[string]string{"alias": "properties.alias"},
	},
}

var cosmosKeys = []string{"primaryMasterKey", "secondaryMasterKey", "primaryReadonlyMasterKey", "secondaryReadonlyMasterKey"}

var storageEndpoints = map[string]string{
	"blobEndpoint": "properties.primaryEndpoints.blob", "queueEndpoint": "properties.primaryEndpoints.queue",
	"tableEndpoint": "properties.primaryEndpoints.table", "fileEndpoint": "properties.primaryEndpoints.file",
	"webEndpoint": "properties.primaryEndpoints.web", "dfsEndpoint": "properties.primaryEndpoints.dfs",
}

// registerExports adds table entries (the exports_<area>.go files).
func registerExports(m map[string]*kindExports) {
	for k, v := range m {
		if old := exportsByKind[k]; old != nil {
			if old.configs == nil {
				old.configs = v.configs
			}
			if old.secrets == nil {
				old.secrets = v.secrets
			}
			old.calls = append(old.calls, v.calls...)
			old.missing = append(old.missing, v.missing...)
			continue
		}
		exportsByKind[k] = v
	}
}

// exporter computes one resource's exports.
type exporter struct {
	ctx  context.Context
	arm  ARM
	a    *Applied
	doc  map[string]any
	kind *kindExports
	k    *Kind // nil when the kind is not in the catalog

	done map[*exportCall]*callResult
	self map[string]any
}

type callResult struct {
	vals map[string]string
	err  error
}

// Exports computes a resource's operatorSpec exports from ARM's answer for
// it, making the kind's extra calls through arm when a value needs one. It
// returns the values it could compute and, when some could not be, an
// *ExportError naming each.
func Exports(ctx context.Context, arm ARM, a Applied, exports []Export) ([]ExportValue, error) {
	if len(exports) == 0 {
		return nil, nil
	}
	doc, err := DecodeARM(a.Response)
	if err != nil {
		return nil, fmt.Errorf("read ARM response for exports: %w", err)
	}
	x := &exporter{ctx: ctx, arm: arm, a: &a, doc: doc, kind: exportsByKind[a.Group+"/"+a.Kind], done: map[*exportCall]*callResult{}}
	if k, ok := Lookup(a.Group, a.Version, a.Kind); ok {
		x.k = k
	}
	var vals []ExportValue
	var problems []*ExportProblem
	for _, ex := range exports {
		if ex.Expr {
			res, err := x.expression(ex)
			switch {
			case err != nil:
			case ex.Key != "" && res.Values == nil:
				vals = append(vals, ExportValue{ex.Secret, ex.Name, ex.Key, res.Value})
			case ex.Key == "" && res.Values != nil:
				keys := make([]string, 0, len(res.Values))
				for k := range res.Values {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					vals = append(vals, ExportValue{ex.Secret, ex.Name, k, res.Values[k]})
				}
			case ex.Key == "":
				err = fmt.Errorf("expression %q returned a string; without a key it must return a map(string, string)", ex.Source)
			default:
				err = fmt.Errorf("expression %q returned a map; with a key it must return a string", ex.Source)
			}
			if err != nil {
				problems = append(problems, &ExportProblem{ex, err})
			}
			continue
		}
		v, err := x.named(ex.Source, ex.Secret)
		if err != nil {
			problems = append(problems, &ExportProblem{ex, err})
			continue
		}
		vals = append(vals, ExportValue{ex.Secret, ex.Name, ex.Key, v})
	}
	if len(problems) > 0 {
		return vals, &ExportError{Problems: problems}
	}
	return vals, nil
}

// named returns a named export (operatorSpec.configMaps or .secrets).
func (x *exporter) named(name string, secret bool) (string, error) {
	ke := x.kind
	if ke == nil {
		// Kinds without a table entry: the name as a member of properties or
		// of the resource, or an endpoint of primaryEndpoints.
		if v, ok := untabledValue(x.doc, x.a.ARMID, name); ok {
			return v, nil
		}
		return "", fmt.Errorf("not in the resource as ARM returned it")
	}
	paths := ke.configs
	if secret {
		paths = ke.secrets
	}
	if p, ok := paths[name]; ok {
		if p == "$subscriptionId" {
			return SubscriptionOf(x.a.ARMID), nil
		}
		if v, ok := exportString(memberAt(x.doc, p)); ok {
			return v, nil
		}
		return "", fmt.Errorf("%s is not set in the resource as ARM returned it", p)
	}
	for _, c := range ke.calls {
		if c.secret != secret || !hasName(c.names, name) {
			continue
		}
		m, err := x.call(c)
		if err != nil {
			return "", err
		}
		// An empty value is missing too: ASO's collectors refuse to write one.
		if v := m[name]; v != "" {
			return v, nil
		}
		return "", fmt.Errorf("ARM's %s response has no %s", c.name, name)
	}
	if hasName(ke.missing, name) {
		return "", fmt.Errorf("%w (%s %s)", ErrNotExported, x.a.Group, x.a.Kind)
	}
	return "", fmt.Errorf("%s %s has no %s export named %q", x.a.Group, x.a.Kind, kindWord(secret), name)
}

// call makes c once.
func (x *exporter) call(c *exportCall) (map[string]string, error) {
	if r := x.done[c]; r != nil {
		return r.vals, r.err
	}
	vals, err := c.fetch(x.ctx, x.arm, x.a, x.doc)
	if err != nil {
		err = fmt.Errorf("%s: %w", c.name, err)
	}
	x.done[c] = &callResult{vals, err}
	return vals, err
}

// secretsFor returns what secretExpressions see as secret: the selected
// fields of ASO's RawSecrets (SelectSecrets of the expression's secret
// usage): the non-empty values of the kind's calls (with ASO's quirks, raw)
// and, for a few kinds, secrets read from the resource (rawSecrets). Secrets
// ASO writes from status only (Redis hostName, Cosmos DB documentEndpoint,
// UserAssignedIdentity, the database servers' fullyQualifiedDomainName) are
// not in it.
func (x *exporter) secretsFor(selected []string) (map[string]string, error) {
	out := map[string]string{}
	if x.kind == nil {
		return out, nil
	}
	for _, name := range selected {
		if p, ok := x.kind.secrets[name]; ok {
			if !hasName(x.kind.rawSecrets, name) {
				continue
			}
			if v, ok := exportString(memberAt(x.doc, p)); ok && v != "" {
				out[name] = v
			}
			continue
		}
		for _, c := range x.kind.calls {
			if !c.secret || !hasName(c.names, name) {
				continue
			}
			m, err := x.call(c)
			if err != nil {
				return nil, err
			}
			if c.raw != nil {
				m = c.raw(m)
			} else {
				m = nonEmpty(m)
			}
			if v, ok := m[name]; ok {
				out[name] = v
			}
		}
	}
	return out, nil
}

// expression evaluates a configMapExpressions / secretExpressions entry.
func (x *exporter) expression(ex Export) (ExpressionResult, error) {
	c, err := CompileExpression(x.k, ex.Source)
	if err != nil {
		return ExpressionResult{}, err
	}
	if !ex.Secret && len(c.Secrets) > 0 {
		return ExpressionResult{}, fmt.Errorf("expression %q reads secret; only secretExpressions may", ex.Source)
	}
	var secret map[string]string
	if ex.Secret && len(c.Secrets) > 0 {
		if secret, err = x.secretsFor(c.Secrets); err != nil {
			return ExpressionResult{}, err
		}
	}
	if x.self == nil {
		x.self = SelfObject(x.k, x.a.Manifest, x.doc, x.a.AzureName)
	}
	return c.Eval(x.ctx, x.self, secret)
}

// memberAt follows a dotted path of object members.
func memberAt(m map[string]any, path string) any {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

// exportString renders a scalar export value as ASO writes it into a config
// map or secret.
func exportString(v any) (string, bool) {
	switch t := v.(type) {
	case string:
		return t, true
	case bool, int64, float64:
		return fmt.Sprint(t), true
	case json.Number:
		return t.String(), true
	}
	return "", false
}

func hasName(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// untabledValue finds an export of a kind without a table entry in the
// resource as ARM returns it.
func untabledValue(doc map[string]any, armID, name string) (string, bool) {
	if name == "subscriptionId" {
		return SubscriptionOf(armID), true
	}
	props, _ := doc["properties"].(map[string]any)
	if s, ok := exportString(props[name]); ok {
		return s, true
	}
	if s, ok := exportString(doc[name]); ok {
		return s, true
	}
	if ep, ok := strings.CutSuffix(name, "Endpoint"); ok && ep != "" {
		ep = strings.ToLower(ep[:1]) + ep[1:]
		if m, ok := props["primaryEndpoints"].(map[string]any); ok {
			if s, ok := exportString(m[ep]); ok {
				return s, true
			}
		}
	}
	return "", false
}

func exportDest(name, key string) string {
	if key == "" {
		return name
	}
	return name + "/" + key
}

func kindWord(secret bool) string {
	if secret {
		return "secret"
	}
	return "config map"
}
