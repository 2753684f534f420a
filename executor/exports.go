package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// kindExports describes the values a kind can export through
// operatorSpec.configMaps and operatorSpec.secrets, as ASO's generated
// configs and azureGeneratedSecrets extensions define them.
type kindExports struct {
	// configs are the configMaps exports: name → dotted path in ARM's
	// resource JSON.
	configs map[string]string
	// secrets are the secrets exports read from the resource itself.
	secrets map[string]string
	// listed are the secrets exports that need the extra call.
	listed []string
	// list is the extra ARM call (listKeys and friends) with the api-version
	// of the SDK client ASO makes it with, which is not the kind's.
	list *listCall
}

type listCall struct {
	path       func(armID string) string
	apiVersion string
	// parse maps the call's response to export names.
	parse func(resp []byte) (map[string]string, error)
}

func post(suffix, apiVersion string, parse func([]byte) (map[string]string, error)) *listCall {
	return &listCall{path: func(id string) string { return id + suffix }, apiVersion: apiVersion, parse: parse}
}

// flat reads top-level string members of the response under export names:
// flat("primaryKey") maps primaryKey to primaryKey, flat("key1=primaryKey")
// maps key1 to the member primaryKey.
func flat(names ...string) func([]byte) (map[string]string, error) {
	return func(b []byte) (map[string]string, error) {
		doc, err := decodeJSON(b)
		if err != nil {
			return nil, err
		}
		out := map[string]string{}
		for _, n := range names {
			exp, member, ok := strings.Cut(n, "=")
			if !ok {
				member = exp
			}
			if s, ok := scalarString(lookupPath(doc, member)); ok {
				out[exp] = s
			}
		}
		return out, nil
	}
}

// keyList reads a {"keys":[{"keyName":..,"value":..}]} response (storage).
func keyList(b []byte) (map[string]string, error) {
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

// sdkPath rewrites the segments of an ARM ID to the casing of the SDK's
// request path (ARM is case-insensitive; this keeps recorded requests equal
// to ASO's).
func sdkPath(suffix string, segments map[string]string) func(string) string {
	return func(id string) string {
		parts := strings.Split(id, "/")
		for i := 1; i < len(parts); i += 2 {
			if s, ok := segments[strings.ToLower(parts[i])]; ok {
				parts[i] = s
			}
		}
		return strings.Join(parts, "/") + suffix
	}
}

// exportsByKind is keyed by group/Kind.
var exportsByKind = map[string]*kindExports{
	"managedidentity.azure.com/UserAssignedIdentity": {
		configs: map[string]string{"clientId": "properties.clientId", "principalId": "properties.principalId", "tenantId": "properties.tenantId"},
		secrets: map[string]string{"clientId": "properties.clientId", "principalId": "properties.principalId", "tenantId": "properties.tenantId", "subscriptionId": "$subscriptionId"},
	},
	"storage.azure.com/StorageAccount": {
		configs: storageEndpoints,
		secrets: storageEndpoints,
		listed:  []string{"key1", "key2"},
		list:    post("/listKeys", "2024-01-01", keyList),
	},
	"servicebus.azure.com/Namespace": {
		secrets: map[string]string{"endpoint": "properties.serviceBusEndpoint"},
		listed:  authRuleKeys,
		list: &listCall{path: sdkPath("/AuthorizationRules/RootManageSharedAccessKey/listKeys", nil),
			apiVersion: "2021-11-01", parse: flat(authRuleKeys...)},
	},
	"servicebus.azure.com/NamespacesAuthorizationRule": {
		listed: authRuleKeys,
		list: &listCall{path: sdkPath("/listKeys", map[string]string{"authorizationrules": "AuthorizationRules"}),
			apiVersion: "2021-11-01", parse: flat(authRuleKeys...)},
	},
	"servicebus.azure.com/TopicAuthorizationRule": {
		listed: authRuleKeys,
		list: &listCall{path: sdkPath("/ListKeys", map[string]string{"authorizationrules": "authorizationRules"}),
			apiVersion: "2021-11-01", parse: flat(authRuleKeys...)},
	},
	"servicebus.azure.com/QueueAuthorizationRule": {
		listed: authRuleKeys,
		list: &listCall{path: sdkPath("/ListKeys", map[string]string{"authorizationrules": "authorizationRules"}),
			apiVersion: "2021-11-01", parse: flat(authRuleKeys...)},
	},
	"eventhub.azure.com/Namespace": {
		listed: authRuleKeys,
		list: &listCall{path: sdkPath("/authorizationRules/RootManageSharedAccessKey/listKeys", nil),
			apiVersion: "2024-01-01", parse: flat(authRuleKeys...)},
	},
	"eventhub.azure.com/NamespacesAuthorizationRule": {
		listed: authRuleKeys,
		list:   post("/listKeys", "2024-01-01", flat(authRuleKeys...)),
	},
	"eventhub.azure.com/NamespacesEventhubsAuthorizationRule": {
		listed: authRuleKeys,
		list:   post("/listKeys", "2024-01-01", flat(authRuleKeys...)),
	},
	"documentdb.azure.com/DatabaseAccount": {
		secrets: map[string]string{"documentEndpoint": "properties.documentEndpoint"},
		listed:  []string{"primaryMasterKey", "secondaryMasterKey", "primaryReadonlyMasterKey", "secondaryReadonlyMasterKey"},
		list:    post("/listKeys", "2021-10-15", flat("primaryMasterKey", "secondaryMasterKey", "primaryReadonlyMasterKey", "secondaryReadonlyMasterKey")),
	},
	"cognitiveservices.azure.com/Account": {
		listed: []string{"key1", "key2"},
		list:   post("/listKeys", "2025-06-01", flat("key1", "key2")),
	},
	"eventgrid.azure.com/Topic": {
		configs: map[string]string{"endpoint": "properties.endpoint"},
		listed:  []string{"key1", "key2"},
		list:    post("/listKeys", "2021-12-01", flat("key1", "key2")),
	},
	"cache.azure.com/Redis": {
		secrets: map[string]string{"hostName": "properties.hostName", "port": "properties.port", "sslPort": "properties.sslPort"},
		listed:  []string{"primaryKey", "secondaryKey"},
		list:    post("/listKeys", "2021-06-01", flat("primaryKey", "secondaryKey")),
	},
	"operationalinsights.azure.com/Workspace": {
		listed: []string{"primarySharedKey", "secondarySharedKey"},
		list: &listCall{path: sdkPath("/sharedKeys", map[string]string{"resourcegroups": "resourcegroups"}),
			apiVersion: "2020-08-01", parse: flat("primarySharedKey", "secondarySharedKey")},
	},
	"signalrservice.azure.com/SignalR": {
		listed: authRuleKeys,
		list:   post("/listKeys", "2023-02-01", flat(authRuleKeys...)),
	},
	"apimanagement.azure.com/Subscription": {
		listed: []string{"primaryKey", "secondaryKey"},
		list:   post("/listSecrets", "2022-08-01", flat("primaryKey", "secondaryKey")),
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
	"containerservice.azure.com/ManagedCluster": {
		configs: map[string]string{"principalId": "identity.principalId", "oidcIssuerProfile": "properties.oidcIssuerProfile.issuerURL"},
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
	"notificationhubs.azure.com/Namespace": {
		configs: map[string]string{"serviceBusEndpoint": "properties.serviceBusEndpoint"},
	},
	"search.azure.com/SearchService": {
		configs: map[string]string{"identityPrincipalId": "identity.principalId", "identityTenantId": "identity.tenantId"},
	},
}

var storageEndpoints = map[string]string{
	"blobEndpoint": "properties.primaryEndpoints.blob", "queueEndpoint": "properties.primaryEndpoints.queue",
	"tableEndpoint": "properties.primaryEndpoints.table", "fileEndpoint": "properties.primaryEndpoints.file",
	"webEndpoint": "properties.primaryEndpoints.web", "dfsEndpoint": "properties.primaryEndpoints.dfs",
}

// ExportsFor returns the export names gitaso can fill for a kind: config map
// names, secret names and whether the kind's azure-generated secrets are
// available to secretExpressions. ok is false for kinds without a table
// entry, whose configMaps are looked up by name in ARM's response.
func ExportsFor(group, kind string) (configs, secrets []string, ok bool) {
	ke := exportsByKind[group+"/"+kind]
	if ke == nil {
		return nil, nil, false
	}
	for k := range ke.configs {
		configs = append(configs, k)
	}
	for k := range ke.secrets {
		secrets = append(secrets, k)
	}
	secrets = append(secrets, ke.listed...)
	sort.Strings(configs)
	sort.Strings(secrets)
	return configs, secrets, true
}

// exporter computes one resource's exports.
type exporter struct {
	ctx  context.Context
	cli  ARM
	r    *planner.Resource
	arm  map[string]any
	kind *kindExports

	listed     map[string]string // result of the extra call, once made
	listedErr  error
	listedDone bool
	self       map[string]any
}

// export computes the resource's operatorSpec exports from ARM's view of it
// (plus the kind's extra call for azure-generated secrets) and makes them
// visible to the resources applied after it.
func (w *walk) export(ctx context.Context, cli ARM, r *planner.Resource, rr *ResourceResult) {
	if len(r.ExportRules) == 0 {
		return
	}
	doc, err := decodeJSON(rr.Response)
	if err != nil {
		w.exportFailed(ctx, rr, record.SeverityWarning, fmt.Errorf("read ARM response for exports: %w", err))
		return
	}
	x := &exporter{ctx: ctx, cli: cli, r: r, arm: doc, kind: exportsByKind[r.Group+"/"+r.Kind]}
	type value struct {
		secret    bool
		name, key string
		v         string
	}
	var vals []value
	var problems []string
	severity := record.SeverityError
	for _, ex := range r.ExportRules {
		if ex.Expr {
			res, err := x.expression(ex)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s %s: %v", kindWord(ex.Secret), exportDest(ex.Name, ex.Key), err))
				if isRetryable(err) {
					severity = record.SeverityWarning
				}
				continue
			}
			switch {
			case ex.Key != "" && res.Values == nil:
				vals = append(vals, value{ex.Secret, ex.Name, ex.Key, res.Value})
			case ex.Key == "" && res.Values != nil:
				for k, v := range res.Values {
					vals = append(vals, value{ex.Secret, ex.Name, k, v})
				}
			case ex.Key == "":
				problems = append(problems, fmt.Sprintf("%s %s: expression %q returned a string; without a key it must return a map(string, string)", kindWord(ex.Secret), ex.Name, ex.Source))
			default:
				problems = append(problems, fmt.Sprintf("%s %s: expression %q returned a map; with a key it must return a string", kindWord(ex.Secret), exportDest(ex.Name, ex.Key), ex.Source))
			}
			continue
		}
		v, err := x.generated(ex.Source, ex.Secret)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s %s (%s): %v", kindWord(ex.Secret), exportDest(ex.Name, ex.Key), ex.Source, err))
			if isRetryable(err) {
				severity = record.SeverityWarning
			}
			continue
		}
		vals = append(vals, value{ex.Secret, ex.Name, ex.Key, v})
	}
	rr.Outputs = map[string]map[string]string{}
	rr.Secrets = map[string]map[string]string{}
	outs := make(planner.Outputs, len(vals))
	for _, v := range vals {
		dst := rr.Outputs
		if v.secret {
			dst = rr.Secrets
		}
		if dst[v.name] == nil {
			dst[v.name] = map[string]string{}
		}
		dst[v.name][v.key] = v.v
		outs[planner.OutputKey(r.Namespace, v.secret, v.name, v.key)] = v.v
	}
	w.mu.Lock()
	for k, v := range outs {
		w.outputs[k] = v
	}
	w.mu.Unlock()
	if len(problems) > 0 {
		w.exportFailed(ctx, rr, severity, errors.New("exports not written: "+strings.Join(problems, "; ")))
	}
}

// exportFailed marks a resource whose exports could not all be written:
// ASO's FailedWritingAdditionalKubernetesObjects, a Warning when a retry may
// succeed (a throttled listKeys), an Error otherwise (a broken expression).
func (w *walk) exportFailed(ctx context.Context, rr *ResourceResult, severity string, err error) {
	rr.Outcome, rr.Err = Failed, err
	rr.Ready = failedCondition(&statusError{reason: "FailedWritingAdditionalKubernetesObjects", severity: severity, msg: err.Error(), err: err})
	w.e.opts.Logger.WarnContext(ctx, "exports failed", "resource", rr.Resource.ID(), "error", err)
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

// isRetryable reports whether an export failure may go away on a later run
// (an ARM call that failed for a retryable reason).
func isRetryable(err error) bool {
	var ae *azure.ARMError
	return errors.As(err, &ae) && ae.Retryable
}

// generated returns a named export (operatorSpec.configMaps or .secrets).
func (x *exporter) generated(name string, secret bool) (string, error) {
	ke := x.kind
	if ke == nil {
		// Kinds without a table entry: the name as a member of properties or
		// of the resource, or an endpoint of primaryEndpoints.
		if v, ok := exportValue(x.arm, x.r, name); ok {
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
			return subscriptionOf(x.r.ARMID), nil
		}
		if v, ok := scalarString(lookupPath(x.arm, p)); ok {
			return v, nil
		}
		return "", fmt.Errorf("%s is not set in the resource as ARM returned it", p)
	}
	if secret && contains(ke.listed, name) {
		m, err := x.listedSecrets()
		if err != nil {
			return "", err
		}
		if v, ok := m[name]; ok {
			return v, nil
		}
		return "", fmt.Errorf("ARM's %s response has no %s", x.listName(), name)
	}
	return "", fmt.Errorf("%s %s has no %s export named %q", x.r.Group, x.r.Kind, kindWord(secret), name)
}

func (x *exporter) listName() string {
	p := x.kind.list.path(x.r.ARMID)
	return p[strings.LastIndexByte(p, '/')+1:]
}

// listedSecrets makes the kind's extra call once.
func (x *exporter) listedSecrets() (map[string]string, error) {
	if x.listedDone {
		return x.listed, x.listedErr
	}
	x.listedDone = true
	if x.kind == nil || x.kind.list == nil {
		x.listed = map[string]string{}
		return x.listed, nil
	}
	l := x.kind.list
	resp, err := x.cli.Post(x.ctx, l.path(x.r.ARMID), l.apiVersion, nil)
	if err != nil {
		x.listedErr = fmt.Errorf("%s: %w", x.listName(), err)
		return nil, x.listedErr
	}
	m, err := l.parse(resp)
	if err != nil {
		x.listedErr = fmt.Errorf("read %s response: %w", x.listName(), err)
		return nil, x.listedErr
	}
	x.listed = m
	return m, nil
}

// expression evaluates a configMapExpressions / secretExpressions entry.
func (x *exporter) expression(ex planner.Export) (evalResult, error) {
	c := compileExpression(ex.Source)
	if c.err != nil {
		return evalResult{}, c.err
	}
	if !ex.Secret && len(c.secrets) > 0 {
		return evalResult{}, fmt.Errorf("expression %q reads secret; only secretExpressions may", ex.Source)
	}
	var secret map[string]string
	if ex.Secret && len(c.secrets) > 0 {
		all := map[string]string{}
		if x.kind != nil {
			for name := range x.kind.secrets {
				if v, err := x.generated(name, true); err == nil {
					all[name] = v
				}
			}
			if x.kind.list != nil {
				m, err := x.listedSecrets()
				if err != nil {
					return evalResult{}, err
				}
				for k, v := range m {
					all[k] = v
				}
			}
		}
		secret = all
	}
	if x.self == nil {
		spec, _ := x.r.Manifest["spec"].(map[string]any)
		if spec == nil {
			spec = map[string]any{}
		}
		x.self = selfObject(x.r.Manifest, spec, x.r.AzureName, x.arm)
	}
	return c.eval(ex.Source, x.self, secret)
}

// lookupPath follows a dotted path of object members.
func lookupPath(m map[string]any, path string) any {
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

// scalarString renders a scalar export value as ASO writes it into a config
// map or secret.
func scalarString(v any) (string, bool) {
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

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// exportValue finds an export of a kind without a table entry in the
// resource as ARM returns it.
func exportValue(doc map[string]any, r *planner.Resource, name string) (string, bool) {
	if name == "subscriptionId" {
		return subscriptionOf(r.ARMID), true
	}
	props, _ := doc["properties"].(map[string]any)
	if s, ok := scalarString(props[name]); ok {
		return s, true
	}
	if s, ok := scalarString(doc[name]); ok {
		return s, true
	}
	if ep, ok := strings.CutSuffix(name, "Endpoint"); ok && ep != "" {
		ep = strings.ToLower(ep[:1]) + ep[1:]
		if m, ok := props["primaryEndpoints"].(map[string]any); ok {
			if s, ok := scalarString(m[ep]); ok {
				return s, true
			}
		}
	}
	return "", false
}
