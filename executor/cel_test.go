package executor

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var benchARM = []byte(`{"id":"/subscriptions/s/resourceGroups/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/team-identity",
"name":"team-identity","location":"westeurope","tags":{"team":"a"},"type":"Microsoft.ManagedIdentity/userAssignedIdentities",
"properties":{"tenantId":"t-1","principalId":"p-1","clientId":"c-1","port":6380}}`)

func benchSelf(tb testing.TB) map[string]any {
	arm, err := decodeJSON(benchARM)
	if err != nil {
		tb.Fatal(err)
	}
	manifest := map[string]any{"apiVersion": "managedidentity.azure.com/v1api20230131", "kind": "UserAssignedIdentity",
		"metadata": map[string]any{"name": "team-identity", "namespace": "team", "labels": map[string]any{"team": "a"}}}
	spec := map[string]any{"location": "westeurope", "owner": map[string]any{"name": "rg"}}
	return selfObject(manifest, spec, "team-identity", arm)
}

func TestEval(t *testing.T) {
	self := benchSelf(t)
	secret := map[string]string{"key1": "k1"}
	for _, tc := range []struct {
		expr    string
		want    evalResult
		secrets []string
	}{
		{`self.status.principalId`, evalResult{Value: "p-1"}, nil},
		{`self.spec.azureName + "." + self.metadata.namespace`, evalResult{Value: "team-identity.team"}, nil},
		{`string(self.status.port + 1)`, evalResult{Value: "6381"}, nil}, // integers stay int
		{`self.status.conditions[0].type`, evalResult{Value: "Ready"}, nil},
		{`self.status.id.split("/")[4]`, evalResult{Value: "rg"}, nil},
		{`{"id": self.status.clientId, "k": secret.key1}`, evalResult{Values: map[string]string{"id": "c-1", "k": "k1"}}, []string{"key1"}},
		{`has(self.status.missing) ? "y" : "n"`, evalResult{Value: "n"}, nil},
		{`secret["key1"]`, evalResult{Value: "k1"}, []string{"*"}},
	} {
		x := compileExpression(tc.expr)
		got, err := x.eval(tc.expr, self, secret)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.expr, d)
		}
		if d := cmp.Diff(tc.secrets, x.secrets); d != "" {
			t.Errorf("%s secrets (-want +got):\n%s", tc.expr, d)
		}
	}
	if _, err := compileExpression(`self.status.nope`).eval(`self.status.nope`, self, nil); err == nil {
		t.Error("missing field: want an error")
	}
	if _, err := compileExpression(`self.status.port`).eval(`self.status.port`, self, nil); err == nil {
		t.Error("int result: want an error")
	}
}

func TestSetPathKeepsOrder(t *testing.T) {
	in := []byte(`{"location":"w","properties":{"b":1,"createMode":"createOrRecover","a":"<x>"},"tags":{"z":"1"}}`)
	out, err := setPath(in, []string{"properties", "createMode"}, marshalJSON("recover"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"location":"w","properties":{"b":1,"createMode":"recover","a":"<x>"},"tags":{"z":"1"}}`; string(out) != want {
		t.Errorf("got %s\nwant %s", out, want)
	}
	out, err = setPath([]byte(`{"location":"w"}`), []string{"properties", "subnets"}, json.RawMessage(`[]`))
	if err != nil || string(out) != `{"location":"w","properties":{"subnets":[]}}` {
		t.Errorf("got %s, %v", out, err)
	}
}

func TestMergeByName(t *testing.T) {
	raw := func(s ...string) []json.RawMessage {
		var out []json.RawMessage
		for _, x := range s {
			out = append(out, json.RawMessage(x))
		}
		return out
	}
	// Load balancer / scale set semantics: the manifest's rules win, Azure's
	// others are kept.
	got := mergeByName(raw(`{"name":"a","v":1}`), raw(`{"name":"a","v":2}`, `{"name":"b"}`))
	if d := cmp.Diff([]string{`{"name":"a","v":1}`, `{"name":"b"}`}, toStrings(got)); d != "" {
		t.Error(d)
	}
}

func toStrings(l []json.RawMessage) []string {
	var out []string
	for _, x := range l {
		out = append(out, string(x))
	}
	return out
}

// BenchmarkCELEval measures one evaluation of a cached expression over self
// (the per-export cost after the first compile).
func BenchmarkCELEval(b *testing.B) {
	self := benchSelf(b)
	secret := map[string]string{"key1": "k1"}
	for _, bc := range []struct{ name, expr string }{
		{"field", `self.status.principalId`},
		{"concat", `"AZURE_CLIENT_ID=" + self.status.clientId + ";TENANT=" + self.status.tenantId`},
		{"map", `{"id": self.status.clientId, "k": secret.key1, "loc": self.spec.location.upperAscii()}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			x := compileExpression(bc.expr)
			for b.Loop() {
				if _, err := x.eval(bc.expr, self, secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCELCompile measures a first-time compile (cache miss).
func BenchmarkCELCompile(b *testing.B) {
	for b.Loop() {
		if x := compile(`{"id": self.status.clientId, "k": secret.key1}`); x.err != nil {
			b.Fatal(x.err)
		}
	}
}
