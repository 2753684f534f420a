package planner_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// secretFed is a resource group tagged with a value from a Secret, and a
// role assignment whose principal ID a ConfigMap takes from a Secret.
const secretFed = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: team}
spec:
  location: westeurope
  tags: {token: "pre-tok-4711-post", plain: visible}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: ids, namespace: team}
data: {principalId: "00000000-aaaa-bbbb-cccc-0000000047ab"}
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra, namespace: team}
spec:
  owner: {name: rg, group: resources.azure.com, kind: ResourceGroup}
  principalIdFromConfig: {name: ids, key: principalId}
  roleDefinitionReference: {armId: /subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/y}
`

func secretFedPlan(t *testing.T, token, principal string, prior map[string]record.Resource) *planner.Plan {
	t.Helper()
	return secretFedPlanOf(t, secretFed, token, principal, prior)
}

func secretFedPlanOf(t *testing.T, text, token, principal string, prior map[string]record.Resource) *planner.Plan {
	t.Helper()
	snap := snapshot(t, map[string]string{"a.yaml": strings.NewReplacer("tok-4711", token, "00000000-aaaa-bbbb-cccc-0000000047ab", principal).Replace(text)})
	for i := range snap.Objects {
		o := &snap.Objects[i]
		switch o.Kind() {
		case "ResourceGroup":
			o.Secrets = []manifest.SecretValue{manifest.NewSecretValue(token, "Secret team/tokens")}
		case "ConfigMap":
			o.Secrets = []manifest.SecretValue{manifest.NewSecretValue(principal, "Secret team/ids")}
		}
	}
	g, err := planner.Build(snap, planner.Options{SubscriptionID: sub})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecretValuesMaskedInPlan: values from Secrets (manifest.Object.Secrets)
// are masked in the request body, the manifest and the config map inputs of
// the plan's JSON form and in its text, whole fields even for a part; the
// plan in memory builds the real request; read back from JSON it refuses to
// (ErrMaskedSecrets) rather than send a mask to Azure.
func TestSecretValuesMaskedInPlan(t *testing.T) {
	const token, principal = "tok-4711", "00000000-aaaa-bbbb-cccc-0000000047ab"
	p := secretFedPlan(t, token, principal, nil)
	js, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := planner.RenderText(&text, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for what, b := range map[string][]byte{"JSON": js, "text": text.Bytes()} {
		for _, v := range []string{token, principal} {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("the %s plan shows %q:\n%s", what, v, b)
			}
		}
	}
	for _, want := range []string{"+ /tags/token = (sensitive value from Secret team/tokens)", "+ /properties/principalId = (sensitive value from Secret team/ids)", `+ /tags/plain = "visible"`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text plan lacks %q:\n%s", want, text.String())
		}
	}
	rg := p.Get("team/resources.azure.com/ResourceGroup/rg")
	if got := rg.Manifest["spec"].(map[string]any)["tags"].(map[string]any)["token"]; got != "(sensitive value from Secret team/tokens)" {
		t.Errorf("manifest tag %v, want masked", got)
	}
	ra := p.Get("team/authorization.azure.com/RoleAssignment/ra")
	if got := ra.Inputs.ConfigMaps["ids/principalId"]; got != "(sensitive value from Secret team/ids)" {
		t.Errorf("config map input %q, want masked", got)
	}
	if len(ra.SecretSources) != 1 || ra.SecretSources[0] != "Secret team/ids" {
		t.Errorf("secret sources %v", ra.SecretSources)
	}

	// In memory: the real request, the fields marked secret.
	for _, c := range []struct {
		r     *planner.Resource
		path  string
		value string
	}{{rg, "/tags/token", "pre-" + token + "-post"}, {ra, "/properties/principalId", principal}} {
		body, err := planner.Resolve(c.r, planner.Values{})
		if err != nil {
			t.Fatalf("resolve %s: %v", c.r.ID(), err)
		}
		if vs := planner.ValuesAt(body.JSON, []string{c.path}); len(vs) != 1 || vs[0] != c.value {
			t.Errorf("%s: the request carries %v at %s, want the real value", c.r.ID(), vs, c.path)
		}
		if planner.HashRequest(c.r.ARMID+"?api-version="+c.r.APIVersion, body.JSON) != c.r.Hash {
			t.Errorf("%s: the resolved request is not the planned one", c.r.ID())
		}
		red, err := c.r.Redact(body.JSON, body.Secrets)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(red, []byte(token)) || bytes.Contains(red, []byte(principal)) {
			t.Errorf("%s: the recorded body shows the value: %s", c.r.ID(), red)
		}
	}

	// Read back from JSON: masked, so not applicable.
	var back planner.Plan
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if _, err := planner.Resolve(back.Get(rg.Key()), planner.Values{}); !errors.Is(err, planner.ErrMaskedSecrets) {
		t.Errorf("a masked manifest resolved: %v, want ErrMaskedSecrets", err)
	}
}

// TestSecretValueChangeIsAMaskedUpdate: a new value in the Secret changes
// the request's hash: an update whose change at the field is masked, the
// old and new values shown nowhere; the same value is a no-op.
func TestSecretValueChangeIsAMaskedUpdate(t *testing.T) {
	const principal = "00000000-aaaa-bbbb-cccc-0000000047ab"
	p := secretFedPlan(t, "tok-4711", principal, nil)
	rg := p.Get("team/resources.azure.com/ResourceGroup/rg")
	body, err := planner.Resolve(rg, planner.Values{})
	if err != nil {
		t.Fatal(err)
	}
	red, err := rg.Redact(body.JSON, body.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	prior := map[string]record.Resource{rg.Key(): {Namespace: "team", Group: rg.Group, Version: rg.Version, Kind: rg.Kind, Name: rg.Name,
		ARMID: rg.ARMID, APIVersion: rg.APIVersion, AppliedHash: rg.Hash, AppliedBody: red,
		Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusTrue}}}

	if a := secretFedPlan(t, "tok-4711", principal, prior).Get(rg.Key()).Action; a != planner.NoOp {
		t.Errorf("same value: %s, want no-op", a)
	}
	again := secretFedPlan(t, "tok-9999", principal, prior)
	r := again.Get(rg.Key())
	if r.Action != planner.Update || len(r.Changes) != 1 || r.Changes[0].Path != "/tags/token" || !r.Changes[0].Sensitive || r.Changes[0].Before != nil || r.Changes[0].After != nil {
		t.Fatalf("new value: %s %+v, want an update with one masked change at /tags/token", r.Action, r.Changes)
	}
	var text bytes.Buffer
	if err := planner.RenderText(&text, again, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "~ /tags/token = (sensitive value from Secret team/tokens)") ||
		strings.Contains(text.String(), "tok-4711") || strings.Contains(text.String(), "tok-9999") {
		t.Errorf("text plan:\n%s", text.String())
	}

	// Only a plain field changes: with the fields' hashes in state, the
	// Secret's field is no change; without them (an earlier gitaso's
	// record) it may have changed, so it is listed, masked.
	plain := func(prior map[string]record.Resource) *planner.Resource {
		t.Helper()
		snap := strings.Replace(secretFed, "plain: visible", "plain: changed", 1)
		p := secretFedPlanOf(t, snap, "tok-4711", principal, prior)
		return p.Get(rg.Key())
	}
	withHashes := prior[rg.Key()]
	withHashes.SecretHashes = planner.SecretHashes(body.JSON, rg.Sensitive)
	if r := plain(map[string]record.Resource{rg.Key(): withHashes}); r.Action != planner.Update || len(r.Changes) != 1 || r.Changes[0].Path != "/tags/plain" {
		t.Errorf("a plain field changed: %s %+v, want one change at /tags/plain", r.Action, r.Changes)
	}
	if r := plain(prior); len(r.Changes) != 2 || !r.Changes[1].Sensitive {
		t.Errorf("without hashes: %+v, want /tags/plain and a masked /tags/token", r.Changes)
	}
}

// TestSecretValueNotInErrors: an input error quoting a field that holds a
// value from a Secret shows the label instead.
func TestSecretValueNotInErrors(t *testing.T) {
	const value = "Sup3rSecretKind"
	snap := snapshot(t, map[string]string{"a.yaml": `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: team}
spec: {location: westeurope}
---
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: sa, namespace: team}
spec:
  location: westeurope
  kind: ` + value + `
  sku: {name: Standard_LRS}
  owner: {name: rg}
`})
	for i := range snap.Objects {
		snap.Objects[i].Secrets = []manifest.SecretValue{manifest.NewSecretValue(value, "Secret team/x")}
	}
	_, err := planner.Build(snap, planner.Options{SubscriptionID: sub})
	if err == nil {
		t.Fatal("an unsupported kind was accepted")
	}
	if msg := err.Error(); strings.Contains(msg, value) || !strings.Contains(msg, `spec.kind: unsupported value "(sensitive value from Secret team/x)"`) {
		t.Errorf("error: %s", msg)
	}
}
