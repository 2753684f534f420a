package aso

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var celUAIArm = []byte(`{"id":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-identity",
"name":"team-identity","location":"westeurope","tags":{"team":"a"},"type":"Microsoft.ManagedIdentity/userAssignedIdentities",
"properties":{"tenantId":"t-1","principalId":"p-1","clientId":"c-1","port":6380}}`)

func uaiSelf(tb testing.TB) map[string]any {
	arm, err := DecodeARM(celUAIArm)
	if err != nil {
		tb.Fatal(err)
	}
	manifest := map[string]any{"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
		"metadata": map[string]any{"name": "team-identity", "namespace": "team", "labels": map[string]any{"team": "a"}},
		"spec":     map[string]any{"location": "westeurope", "owner": map[string]any{"name": "rg"}}}
	return SelfObject(nil, manifest, arm, "team-identity")
}

// redisSample is the Redis of ASO's CEL guide (docs/hugo/content/guide/expressions.md).
func redisSample(tb testing.TB) (*Kind, map[string]any) {
	manifest := map[string]any{
		"apiVersion": "cache.azure.com/v1api20230801", "kind": "Redis",
		"metadata": map[string]any{"name": "sampleredis1", "namespace": "default", "annotations": map[string]any{"foo": "bar", "baz": "qux"}},
		"spec": map[string]any{
			"location": "westus2", "owner": map[string]any{"name": "aso-sample-rg"},
			"tags":             map[string]any{"tag one": "hello", "tag two": "goodbye", "three": "four"},
			"sku":              map[string]any{"family": "P", "name": "Premium", "capacity": 1},
			"enableNonSslPort": false, "minimumTlsVersion": "1.2",
			"redisConfiguration": map[string]any{"maxmemory-delta": "10", "maxmemory-policy": "allkeys-lru"},
			"redisVersion":       "6", "zones": []any{"1", "2", "3", "4"},
		},
	}
	arm := map[string]any{"id": "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Cache/Redis/sampleredis1", "location": "westus2",
		"properties": map[string]any{"hostName": "sampleredis1.redis.cache.windows.net", "port": int64(6379), "sslPort": int64(6380)}}
	return mustKind(tb, "cache.azure.com/v1api20230801", "Redis"), SelfObject(nil, manifest, arm, "sampleredis1")
}

// TestASOGuideExamples runs the examples of ASO's CEL guide with its results.
func TestASOGuideExamples(t *testing.T) {
	k, self := redisSample(t)
	for _, tc := range []struct {
		expr string
		want ExpressionResult
		err  string
	}{
		{`"helloworld"`, ExpressionResult{Value: "helloworld"}, ""},
		{`"%s:%d".format([self.spec.location, 7])`, ExpressionResult{Value: "westus2:7"}, ""},
		{`self.metadata.namespace + ":" + self.metadata.name`, ExpressionResult{Value: "default:sampleredis1"}, ""},
		{`self.spec.sku.capacity`, ExpressionResult{}, "expression \"self.spec.sku.capacity\" must return one of [string,map(string, string)], but was int"},
		{`string(self.spec.sku.capacity)`, ExpressionResult{Value: "1"}, ""},
		{`self.metadata.annotations`, ExpressionResult{Values: map[string]string{"foo": "bar", "baz": "qux"}}, ""},
		{`self.spec.zones.filter(a, int(a) % 2 == 0).join("-")`, ExpressionResult{Value: "2-4"}, ""},
		{`self.spec.tags.transformMapEntry(k, v, {k.replace(" ", "-"): v})`,
			ExpressionResult{Values: map[string]string{"tag-one": "hello", "tag-two": "goodbye", "three": "four"}}, ""},
		{`self.spec.zones[0]`, ExpressionResult{Value: "1"}, ""},
		{`self.metadata.annotations["foo"]`, ExpressionResult{Value: "bar"}, ""},
		// Escaped field names (ASO's escaping section).
		{`self.spec.redisConfiguration.maxmemory__dash__delta`, ExpressionResult{Value: "10"}, ""},
		// Status from ARM, integers as int.
		{`self.status.hostName + ":" + string(self.status.sslPort)`, ExpressionResult{Value: "sampleredis1.redis.cache.windows.net:6380"}, ""},
		{`{"location": self.status.location, "namespacedName": self.metadata.namespace + ":" + self.metadata.name}`,
			ExpressionResult{Values: map[string]string{"location": "westus2", "namespacedName": "default:sampleredis1"}}, ""},
		// ASO's error cases (internal/util/cel/cel_test.go).
		{`this expression is not valid`, ExpressionResult{}, `failed to compile CEL expression: "this expression is not valid"`},
		{`7`, ExpressionResult{}, `expression "7" must return one of [string,map(string, string)], but was int`},
		{`self.this.doesnt.exist`, ExpressionResult{}, "undefined field 'this'"},
	} {
		x, err := CompileExpression(k, tc.expr)
		var got ExpressionResult
		if err == nil {
			got, err = x.Eval(context.Background(), self, nil)
		}
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.expr, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.expr, d)
		}
	}
}

// TestTypedSelf: self is typed from the catalog, as ASO types it from the Go
// resource type: misspelt spec and metadata fields fail at compile time,
// unset fields read as zero values.
func TestTypedSelf(t *testing.T) {
	k, self := redisSample(t)
	for _, tc := range []struct{ expr, err string }{
		{`self.spec.locaton`, "undefined field 'locaton'"},
		{`self.spec.sku.nam`, "undefined field 'nam'"},
		{`self.metadata.nme`, "undefined field 'nme'"},
		{`self.apiVersion`, "undefined field 'apiVersion'"}, // ASO's TypeMeta is inlined without a name
		{`self.spec.redisConfiguration["maxmemory-delta"]`, "no matching overload"},
		{`self.spec.enableNonSslPort`, "but was bool"},
	} {
		if err := CheckExpression(k, tc.expr); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want %q", tc.expr, err, tc.err)
		}
	}
	for expr, want := range map[string]string{
		`self.spec.staticIP`:                                           "", // unset string
		`has(self.spec.staticIP) ? "set" : "unset"`:                    "unset",
		`has(self.spec.location) ? "set" : "unset"`:                    "set",
		`string(self.spec.shardCount)`:                                 "0",
		`string(size(self.spec.tenantSettings))`:                       "0",
		`self.spec.owner.name`:                                         "aso-sample-rg",
		`self.spec.?subnetReference.armId.orValue("none")`:             "none", // unset: absent
		`self.spec.azureName`:                                          "sampleredis1",
		`self.status.?nothing.orValue("absent")`:                       "absent",
		`self.spec.zones.exists(i, z, i == 3 && z == "4") ? "y" : "n"`: "y",
	} {
		x, err := CompileExpression(k, expr)
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		got, err := x.Eval(context.Background(), self, nil)
		if err != nil || got.Value != want {
			t.Errorf("%s = %q, %v; want %q", expr, got.Value, err, want)
		}
	}
	// Status is dynamic (no status types): a misspelt status field compiles and fails when evaluated.
	x, err := CompileExpression(k, `self.status.hostNme`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Eval(context.Background(), self, nil); err == nil || !strings.Contains(err.Error(), "no such key: hostNme") {
		t.Errorf("misspelt status field: %v", err)
	}
}

// TestCELEnvironment: each of ASO's options, and the libraries it does not
// enable.
func TestCELEnvironment(t *testing.T) {
	self := uaiSelf(t)
	k := mustKind(t, "managedidentity.azure.com/v1api20230131", "UserAssignedIdentity")
	for _, tc := range []struct{ name, expr, want string }{
		{"strings v3 charAt/indexOf/lowerAscii", `self.status.clientId.charAt(0) + string(self.metadata.name.indexOf("-")) + "ABC".lowerAscii()`, "c4abc"},
		{"strings v3 format", `"%s=%d".format(["port", self.status.port])`, "port=6380"},
		{"strings v3 join/split/substring/trim/upperAscii", `" a,b ".trim().split(",").join("+").upperAscii() + "xyz".substring(1)`, "A+Byz"},
		{"strings v3 quote", `strings.quote("a\"b")`, `"a\"b"`},
		{"strings v3 reverse (v3)", `"abc".reverse()`, "cba"},
		{"optional types", `self.metadata.labels.?missing.orValue("dflt") + optional.of("x").value()`, "dfltx"},
		{"cross-type numeric comparisons", `self.status.port > 6379.5 && 1u < 2 ? "y" : "n"`, "y"},
		{"UTC default time zone", `string(timestamp("2024-01-02T03:04:05Z").getHours())`, "3"},
		{"two-variable comprehensions: transformMap", `{"a": "1", "b": "2"}.transformMap(k, v, v + k)["b"]`, "2b"},
		{"two-variable comprehensions: all", `["x", "y"].all(i, v, i < 2 && v != "") ? "y" : "n"`, "y"},
		{"standard macros", `[1, 2, 3].map(x, x * 2).filter(x, x > 2).exists_one(x, x == 6) ? "y" : "n"`, "y"},
	} {
		x, err := CompileExpression(k, tc.expr)
		if err != nil {
			t.Errorf("%s: %s: %v", tc.name, tc.expr, err)
			continue
		}
		got, err := x.Eval(context.Background(), self, nil)
		if err != nil || got.Value != tc.want {
			t.Errorf("%s: %s = %q, %v; want %q", tc.name, tc.expr, got.Value, err, tc.want)
		}
	}
	// Libraries ASO does not enable.
	for _, expr := range []string{
		`base64.encode(b"x")`,                              // encoders
		`string([3, 1].sort()[0])`,                         // lists
		`sets.contains([1], [1]) ? "y" : "n"`,              // sets
		`string(math.greatest(1, 2))`,                      // math
		`"a".matches("a") ? string(["a"].distinct()) : ""`, // ext lists distinct
		`string(cel.bind(x, 1, x))`,                        // bindings
		`"abc".sliceFoo()`,
	} {
		if err := CheckExpression(k, expr); err == nil {
			t.Errorf("%s compiles; ASO's environment does not have it", expr)
		}
	}
}

// TestCELCostLimit: an expression whose evaluation exceeds MaxExpressionCost
// is stopped (ASO has no limit; gitaso refuses it rather than stall).
func TestCELCostLimit(t *testing.T) {
	self := uaiSelf(t)
	expr := `[1,2,3,4,5,6,7,8,9,10].map(a, [1,2,3,4,5,6,7,8,9,10].map(b, [1,2,3,4,5,6,7,8,9,10].map(c, [1,2,3,4,5,6,7,8,9,10].map(d, [1,2,3,4,5,6,7,8,9,10].map(e, a*b*c*d*e))))).size() > 0 ? "big" : "small"`
	x, err := CompileExpression(nil, expr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := x.Eval(context.Background(), self, nil); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
		t.Errorf("want the cost limit exceeded, got %v", err)
	}
	// A cancelled context stops an evaluation too.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.Eval(ctx, self, nil); err == nil {
		t.Error("cancelled context: want an error")
	}
	// Ordinary expressions are far below the limit.
	y, _ := CompileExpression(nil, `self.status.principalId`)
	if got, err := y.Eval(context.Background(), self, nil); err != nil || got.Value != "p-1" {
		t.Errorf("%v %v", got, err)
	}
}

func TestEval(t *testing.T) {
	self := uaiSelf(t)
	secret := map[string]string{"key1": "k1"}
	for _, tc := range []struct {
		expr    string
		want    ExpressionResult
		secrets []string
	}{
		{`self.status.principalId`, ExpressionResult{Value: "p-1"}, nil},
		{`self.spec.azureName + "." + self.metadata.namespace`, ExpressionResult{Value: "team-identity.team"}, nil},
		{`string(self.status.port + 1)`, ExpressionResult{Value: "6381"}, nil}, // integers stay int
		{`self.status.conditions[0].type`, ExpressionResult{Value: "Ready"}, nil},
		{`self.status.id.split("/")[4]`, ExpressionResult{Value: "rg"}, nil},
		{`{"id": self.status.clientId, "k": secret.key1}`, ExpressionResult{Values: map[string]string{"id": "c-1", "k": "k1"}}, []string{"key1"}},
		{`has(self.status.missing) ? "y" : "n"`, ExpressionResult{Value: "n"}, nil},
		{`secret["key1"]`, ExpressionResult{Value: "k1"}, nil}, // not a selection: ASO would not pass key1
	} {
		for _, k := range []*Kind{nil, mustKind(t, "managedidentity.azure.com/v1api20230131", "UserAssignedIdentity")} {
			x, err := CompileExpression(k, tc.expr)
			if err != nil {
				t.Errorf("%s: %v", tc.expr, err)
				continue
			}
			got, err := x.Eval(context.Background(), self, secret)
			if err != nil {
				t.Errorf("%s: %v", tc.expr, err)
				continue
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("%s (-want +got):\n%s", tc.expr, d)
			}
			if d := cmp.Diff(tc.secrets, x.Secrets); d != "" {
				t.Errorf("%s secrets (-want +got):\n%s", tc.expr, d)
			}
		}
	}
	if x, err := CompileExpression(nil, `self.status.nope`); err != nil {
		t.Fatal(err)
	} else if _, err := x.Eval(context.Background(), self, nil); err == nil {
		t.Error("missing field: want an error")
	}
	if x, err := CompileExpression(nil, `self.status.port`); err != nil {
		t.Fatal(err)
	} else if _, err := x.Eval(context.Background(), self, nil); err == nil {
		t.Error("int result: want an error")
	}
}

func TestEscapeCELField(t *testing.T) {
	for in, want := range map[string]string{
		"my__field": "my__underscores__field", "my.field": "my__dot__field", "my-field": "my__dash__field",
		"my/field": "my__slash__field", "false": "__false__", "in": "__in__", "const": "const", "_x": "_x",
	} {
		if got := escapeCELField(in); got != want {
			t.Errorf("escape(%q) = %q, want %q", in, got, want)
		}
	}
}

// BenchmarkCELEval measures one evaluation of a cached expression over self
// (the per-export cost after the first compile).
func BenchmarkCELEval(b *testing.B) {
	self := uaiSelf(b)
	k := mustKind(b, "managedidentity.azure.com/v1api20230131", "UserAssignedIdentity")
	secret := map[string]string{"key1": "k1"}
	for _, bc := range []struct{ name, expr string }{
		{"field", `self.status.principalId`},
		{"concat", `"AZURE_CLIENT_ID=" + self.status.clientId + ";TENANT=" + self.status.tenantId`},
		{"map", `{"id": self.status.clientId, "k": secret.key1, "loc": self.spec.location.upperAscii()}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			x, err := CompileExpression(k, bc.expr)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := x.Eval(context.Background(), self, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCELCompile measures a first-time compile (cache miss) with a typed self.
func BenchmarkCELCompile(b *testing.B) {
	k := mustKind(b, "managedidentity.azure.com/v1api20230131", "UserAssignedIdentity")
	for b.Loop() {
		if x := compileExpression(k, `{"id": self.status.clientId, "k": secret.key1}`); x.err != nil {
			b.Fatal(x.err)
		}
	}
}

// TestSelfKeepsProperties: kinds whose spec keeps ARM's properties object
// (cognitiveservices Account) keep it in status too, as ASO's status types
// do; others have it lifted.
func TestSelfKeepsProperties(t *testing.T) {
	arm := map[string]any{"name": "a", "properties": map[string]any{"endpoint": "https://a/", "endpoints": map[string]any{"x y": "https://x/"}}}
	acct := mustKind(t, "cognitiveservices.azure.com/v1api20250601", "Account")
	manifest := map[string]any{"metadata": map[string]any{"name": "a"}, "spec": map[string]any{"properties": map[string]any{"publicNetworkAccess": "Enabled"}}}
	self := SelfObject(acct, manifest, arm, "a")
	for expr, want := range map[string]ExpressionResult{
		`self.status.properties.endpoint`:                                                    {Value: "https://a/"},
		`self.spec.properties.publicNetworkAccess`:                                           {Value: "Enabled"},
		`self.status.properties.endpoints.transformMapEntry(k, v, {k.replace(" ", "-"): v})`: {Values: map[string]string{"x-y": "https://x/"}},
	} {
		x, err := CompileExpression(acct, expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		got, err := x.Eval(context.Background(), self, nil)
		if err != nil || !cmp.Equal(got, want) {
			t.Errorf("%s = %+v, %v; want %+v", expr, got, err, want)
		}
	}
	if _, ok := SelfObject(nil, manifest, arm, "a")["status"].(map[string]any)["endpoint"]; !ok {
		t.Error("flattened kinds: properties are lifted")
	}
}

// TestCELConcurrent: environments, the expression cache and programs are
// shared by the executor's parallel workers.
func TestCELConcurrent(t *testing.T) {
	k, self := redisSample(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			expr := fmt.Sprintf(`self.spec.location + "-%d"`, i%3)
			for range 20 {
				x, err := CompileExpression(k, expr)
				if err != nil {
					t.Error(err)
					return
				}
				if got, err := x.Eval(context.Background(), self, nil); err != nil || !strings.HasPrefix(got.Value, "westus2-") {
					t.Errorf("%s = %v, %v", expr, got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
