package planner_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/internal/fixtures"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
)

var update = flag.Bool("update", false, "rewrite golden files")

const sub = "11111111-2222-3333-4444-555555555555"

// onboarding is a small version of the seeds' platform onboarding: a
// resource group, an identity exporting its principalId, a role assignment
// reading it, and a storage account with a blob container.
const onboarding = fixtures.Onboarding

func snapshot(t testing.TB, files map[string]string) *manifest.Snapshot {
	t.Helper()
	snap := &manifest.Snapshot{Revision: "0123456789abcdef0123456789abcdef01234567"}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		objs, err := source.ParseFile(n, []byte(files[n]))
		if err != nil {
			t.Fatalf("parse %s: %v", n, err)
		}
		snap.Objects = append(snap.Objects, objs...)
	}
	return snap
}

func build(t testing.TB, files map[string]string) *planner.Graph {
	t.Helper()
	g, err := planner.Build(snapshot(t, files), planner.Options{SubscriptionID: sub})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return g
}

func TestBuildOrdersByDependencies(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	pos := map[string]int{}
	for i, n := range g.Nodes {
		pos[n.Kind.Kind] = i
	}
	for _, e := range [][2]string{
		{"ResourceGroup", "UserAssignedIdentity"},
		{"UserAssignedIdentity", "RoleAssignment"},
		{"ResourceGroup", "StorageAccount"},
		{"StorageAccount", "StorageAccountsBlobService"},
		{"StorageAccountsBlobService", "StorageAccountsBlobServicesContainer"},
	} {
		if pos[e[0]] >= pos[e[1]] {
			t.Errorf("%s must come before %s: order %v", e[0], e[1], pos)
		}
	}
	ra := g.Node(planner.Key("platform", "authorization.azure.com", "RoleAssignment", "team-a-contributor"))
	if ra == nil {
		t.Fatal("role assignment missing")
	}
	want := []string{
		"platform/managedidentity.azure.com/UserAssignedIdentity/team-a-identity",
		"platform/resources.azure.com/ResourceGroup/team-a-rg",
	}
	if diff := cmp.Diff(want, ra.DependsOn); diff != "" {
		t.Errorf("role assignment edges (-want +got):\n%s", diff)
	}
	c := g.Node(planner.Key("platform", "storage.azure.com", "StorageAccountsBlobServicesContainer", "data"))
	wantID := "/subscriptions/" + sub + "/resourceGroups/team-a-rg/providers/Microsoft.Storage/storageAccounts/teamastorage/blobServices/default/containers/data"
	if c.ARMID != wantID {
		t.Errorf("container ARM ID = %s, want %s", c.ARMID, wantID)
	}
}

func TestPlanCreateWithKnownAfterApply(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Resources {
		if r.Action != planner.Create {
			t.Errorf("%s: action %s, want create", r.ID(), r.Action)
		}
	}
	ra := p.Get(planner.Key("platform", "authorization.azure.com", "RoleAssignment", "team-a-contributor"))
	if diff := cmp.Diff([]string{"/properties/principalId"}, ra.KnownAfterApply); diff != "" {
		t.Errorf("known after apply (-want +got):\n%s", diff)
	}
	if !bytes.Contains(ra.Request.Body, []byte(`"principalId":"(known after apply)"`)) {
		t.Errorf("body does not show the unknown principalId: %s", ra.Request.Body)
	}
	if ra.Hash != "" {
		t.Error("a body with unknown values must not have a hash")
	}
	var buf bytes.Buffer
	if err := planner.RenderText(&buf, p, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "create.txt", buf.Bytes())
	buf.Reset()
	if err := planner.RenderJSON(&buf, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "create.json", buf.Bytes())

	// With the identity's principalId known from an earlier apply the value
	// is resolved at plan time.
	p2, err := g.Plan(planner.Input{Outputs: planner.Outputs{
		planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): "aaaaaaaa-0000-0000-0000-000000000001",
	}})
	if err != nil {
		t.Fatal(err)
	}
	ra2 := p2.Get(ra.Key())
	if len(ra2.KnownAfterApply) != 0 || !bytes.Contains(ra2.Request.Body, []byte(`"principalId":"aaaaaaaa-0000-0000-0000-000000000001"`)) {
		t.Errorf("principalId not resolved from outputs: %s", ra2.Request.Body)
	}
}

// applied returns state as if p had been applied successfully.
func applied(t *testing.T, p *planner.Plan, secrets ...planner.SecretSource) map[string]record.Resource {
	t.Helper()
	var src planner.SecretSource
	if len(secrets) > 0 {
		src = secrets[0]
	}
	prior := map[string]record.Resource{}
	outs := planner.Outputs{planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): "aaaaaaaa-0000-0000-0000-000000000001"}
	for _, r := range p.Resources {
		body, err := planner.Resolve(r, planner.Values{Outputs: outs, Secrets: src})
		if err != nil {
			t.Fatal(err)
		}
		red, _ := planner.Redact(body.JSON, body.Secrets)
		prior[r.Key()] = record.Resource{
			Namespace: r.Namespace, Group: r.Group, Version: r.Version, Kind: r.Kind, Name: r.Name,
			ARMID: r.ARMID, APIVersion: r.APIVersion, Policy: string(r.Policy),
			AppliedHash: planner.HashRequest(r.ARMID+"?api-version="+r.APIVersion, body.JSON),
			AppliedBody: red, Ready: record.Condition{Type: "Ready", Status: "True"},
		}
		// Its exports were written when it was applied.
		rec := prior[r.Key()]
		for _, ex := range r.ExportRules {
			if ex.Secret {
				rec.SecretOutputs = append(rec.SecretOutputs, ex.Name+"/"+ex.Key)
				continue
			}
			if rec.Outputs == nil {
				rec.Outputs = map[string]string{}
			}
			rec.Outputs[ex.Name+"/"+ex.Key] = "exported"
		}
		prior[r.Key()] = rec
	}
	return prior
}

func TestPlanNoOpUpdateDelete(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, _ := g.Plan(planner.Input{})
	prior := applied(t, p)
	outs := planner.Outputs{planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): "aaaaaaaa-0000-0000-0000-000000000001"}

	same, err := g.Plan(planner.Input{Prior: prior, Outputs: outs})
	if err != nil {
		t.Fatal(err)
	}
	if same.HasChanges() {
		var buf bytes.Buffer
		_ = planner.RenderText(&buf, same, planner.TextOptions{})
		t.Fatalf("unchanged manifests planned changes:\n%s", buf.String())
	}

	// Change one field and remove the container.
	changed := strings.Replace(onboarding, "name: Standard_LRS", "name: Standard_GRS", 1)
	changed = changed[:strings.LastIndex(changed, "---")]
	g2 := build(t, map[string]string{"platform/team-a.yaml": changed})
	p2, err := g2.Plan(planner.Input{Prior: prior, Outputs: outs})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range p2.Resources {
		if r.Action != planner.NoOp {
			got[r.ID()] = r.Action.String()
		}
	}
	want := map[string]string{
		"platform/StorageAccount/teamastorage":               "update",
		"platform/StorageAccountsBlobServicesContainer/data": "delete",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("actions (-want +got):\n%s", diff)
	}
	sa := p2.Get(planner.Key("platform", "storage.azure.com", "StorageAccount", "teamastorage"))
	wantChanges := []planner.Change{{Path: "/sku/name", Op: "replace", Before: "Standard_LRS", After: "Standard_GRS"}}
	if diff := cmp.Diff(wantChanges, sa.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	del := p2.Resources[len(p2.Resources)-1]
	if del.Action != planner.Delete || del.Request == nil || del.Request.Method != "DELETE" {
		t.Errorf("last resource should be the DELETE, got %+v", del)
	}
}

func TestDeleteCascadesUnderResourceGroup(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, _ := g.Plan(planner.Input{})
	prior := applied(t, p)
	empty := build(t, map[string]string{"other.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {}\n"})
	pd, err := empty.Plan(planner.Input{Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	var sent []string
	for _, r := range pd.Resources {
		if r.Action != planner.Delete {
			t.Errorf("%s: %s", r.ID(), r.Action)
		}
		if r.Request != nil {
			sent = append(sent, r.ID())
		} else if r.DeletedWith != planner.Key("platform", "resources.azure.com", "ResourceGroup", "team-a-rg") {
			t.Errorf("%s deleted with %q", r.ID(), r.DeletedWith)
		}
	}
	if diff := cmp.Diff([]string{"platform/ResourceGroup/team-a-rg"}, sent); diff != "" {
		t.Errorf("DELETEs sent (-want +got):\n%s", diff)
	}
}

func TestDriftAndAdopt(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, _ := g.Plan(planner.Input{})
	prior := applied(t, p)
	outs := planner.Outputs{planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): "aaaaaaaa-0000-0000-0000-000000000001"}
	sa := g.Node(planner.Key("platform", "storage.azure.com", "StorageAccount", "teamastorage"))
	rg := g.Node(planner.Key("platform", "resources.azure.com", "ResourceGroup", "team-a-rg"))
	observed := planner.Observed{
		strings.ToLower(sa.ARMID): json.RawMessage(`{"id":"` + sa.ARMID + `","name":"teamastorage","kind":"StorageV2","location":"West Europe","sku":{"name":"Standard_GRS","tier":"Standard"},"properties":{"provisioningState":"Succeeded"}}`),
		strings.ToLower(rg.ARMID): json.RawMessage(`{"id":"` + strings.ToUpper(rg.ARMID) + `","name":"team-a-rg","location":"westeurope","properties":{"provisioningState":"Succeeded"}}`),
	}
	pd, err := g.Plan(planner.Input{Prior: prior, Observed: observed, Outputs: outs})
	if err != nil {
		t.Fatal(err)
	}
	if r := pd.Get(rg.Key()); r.Action != planner.NoOp {
		t.Errorf("resource group: %s %v (location and ID casing must not count as drift)", r.Action, r.Changes)
	}
	r := pd.Get(sa.Key())
	if r.Action != planner.Drift {
		t.Fatalf("storage account: %s, want drift", r.Action)
	}
	want := []planner.Change{{Path: "/sku/name", Op: "replace", Before: "Standard_GRS", After: "Standard_LRS"}}
	if diff := cmp.Diff(want, r.Changes); diff != "" {
		t.Errorf("drift changes (-want +got):\n%s", diff)
	}
	// Not in state but in Azure: adopt.
	delete(prior, sa.Key())
	pa, _ := g.Plan(planner.Input{Prior: prior, Observed: observed, Outputs: outs})
	if r := pa.Get(sa.Key()); r.Action != planner.Adopt {
		t.Errorf("storage account: %s, want adopt", r.Action)
	}
	// The text says adopt once, and why (issue 26: it once said it three times).
	var text bytes.Buffer
	if err := planner.RenderText(&text, pa, planner.TextOptions{}); err != nil {
		t.Fatal(err)
	}
	line := ""
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.Contains(l, "teamastorage") && strings.Contains(l, "adopted") {
			line = l
		}
	}
	if !strings.HasSuffix(line, "exists in Azure and will be adopted (not in gitaso's state yet; its manifest is PUT over it)") ||
		strings.Count(line, "adopt") != 1 || strings.Count(line, "exists in Azure") != 1 {
		t.Errorf("adopt line reads %q", line)
	}
}

func TestSecretsNeverRendered(t *testing.T) {
	pg := fixtures.Database("hunter2-very-secret")
	g := build(t, map[string]string{"db.yaml": pg})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_ = planner.RenderJSON(&buf, p)
	_ = planner.RenderText(&buf, p, planner.TextOptions{})
	if bytes.Contains(buf.Bytes(), []byte("hunter2")) {
		t.Fatalf("secret value rendered:\n%s", buf.String())
	}
	if !bytes.Contains(buf.Bytes(), []byte(planner.Redacted)) {
		t.Errorf("no redaction marker in plan")
	}
	// The executor's body still carries the value.
	r := p.Get(planner.Key("db", "dbforpostgresql.azure.com", "FlexibleServer", "pg"))
	body, err := planner.Resolve(r, planner.Values{Secrets: g})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(body.JSON, []byte("hunter2-very-secret")) {
		t.Errorf("executor body lacks the secret: %s", body.JSON)
	}
	// A changed password is an update without showing either value.
	prior := applied(t, p, g)
	g2 := build(t, map[string]string{"db.yaml": strings.Replace(pg, "hunter2-very-secret", "correct-horse", 1)})
	p2, _ := g2.Plan(planner.Input{Prior: prior})
	r2 := p2.Get(r.Key())
	if r2.Action != planner.Update || len(r2.Changes) != 1 || !r2.Changes[0].Sensitive {
		t.Errorf("password change: %s %+v", r2.Action, r2.Changes)
	}
}

func TestInputErrorsNameFileObjectField(t *testing.T) {
	files := map[string]string{
		"a.yaml": `
apiVersion: storage.azure.com/v1api20230101
kind: StorageAccount
metadata: {name: orphan, namespace: team}
spec:
  location: westeurope
  kind: StorageV2
  sku: {name: Standard_LRS}
  owner: {name: missing-rg}
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra, namespace: team}
spec:
  owner: {name: x, group: resources.azure.com, kind: ResourceGroup}
  principalIdFromConfig: {name: nowhere, key: principalId}
  roleDefinitionReference: {armId: /subscriptions/x/providers/Microsoft.Authorization/roleDefinitions/y}
---
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: x, namespace: team}
spec: {location: westeurope}
`,
	}
	_, err := planner.Build(snapshot(t, files), planner.Options{SubscriptionID: sub})
	l := diag.AsList(err)
	var got []string
	for _, e := range l.Sorted() {
		got = append(got, e.Error())
	}
	want := []string{
		`a.yaml:2: team/StorageAccount/orphan: spec.owner.name: owner ResourceGroup "missing-rg" not found in namespace "team"`,
		`a.yaml:11: team/RoleAssignment/ra: spec.principalIdFromConfig: config map nowhere (key "principalId") not found in namespace "team": declare it or export it from a resource's operatorSpec`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
}

func TestCycleIsDeterministic(t *testing.T) {
	// A role definition assignable at a role assignment that uses it.
	files := map[string]string{"c.yaml": `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg, namespace: n}
spec: {location: westeurope}
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleDefinition
metadata: {name: rd, namespace: n}
spec:
  roleName: custom
  owner: {name: rg, group: resources.azure.com, kind: ResourceGroup}
  assignableScopesReferences:
    - {group: authorization.azure.com, kind: RoleAssignment, name: ra}
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata: {name: ra, namespace: n}
spec:
  owner: {name: rg, group: resources.azure.com, kind: ResourceGroup}
  principalId: 00000000-0000-0000-0000-0000000000aa
  roleDefinitionReference: {group: authorization.azure.com, kind: RoleDefinition, name: rd}
`}
	var first string
	for i := 0; i < 5; i++ {
		_, err := planner.Build(snapshot(t, files), planner.Options{SubscriptionID: sub})
		if err == nil {
			t.Fatal("want a cycle error")
		}
		if i == 0 {
			first = err.Error()
			continue
		}
		if err.Error() != first {
			t.Fatalf("cycle error differs between runs:\n%s\n%s", first, err)
		}
	}
	want := "c.yaml:16: n/RoleAssignment/ra: dependency cycle: n/RoleAssignment/ra -> n/RoleDefinition/rd -> n/RoleAssignment/ra"
	if first != want {
		t.Errorf("cycle error\n got %s\nwant %s", first, want)
	}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

func TestRenderMarkdown(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := planner.RenderMarkdown(&buf, p); err != nil {
		t.Fatal(err)
	}
	golden(t, "create.md", buf.Bytes())
}

// TestPlanExportsChanged: an operatorSpec export added or removed while the
// ARM body stays the same is an update (the exports are written when the
// resource is applied), and the same exports are no change.
func TestPlanExportsChanged(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, _ := g.Plan(planner.Input{})
	outs := planner.Outputs{planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): "aaaaaaaa-0000-0000-0000-000000000001"}
	var key string
	for _, r := range p.Resources {
		if len(r.ExportRules) > 0 {
			key = r.Key()
		}
	}
	if key == "" {
		t.Fatal("the onboarding example exports nothing")
	}
	for name, edit := range map[string]func(*record.Resource){
		"export added":   func(r *record.Resource) { r.Outputs = nil },
		"export removed": func(r *record.Resource) { r.Outputs["gone/key"] = "x" },
	} {
		prior := applied(t, p)
		rec := prior[key]
		edit(&rec)
		prior[key] = rec
		got, err := g.Plan(planner.Input{Prior: prior, Outputs: outs})
		if err != nil {
			t.Fatal(err)
		}
		if r := got.Get(key); r.Action != planner.Update || !strings.Contains(r.Reason, "exports changed") {
			t.Errorf("%s: %s %q, want an update", name, r.Action, r.Reason)
		}
	}
}

// While the state is rebuilt (Input.AdoptWithoutWrite), an adoption whose
// Azure object holds the manifest is planned without a request; one that
// differs, or is not provisioned, keeps its PUT and says why.
func TestAdoptWithoutWrite(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	sa := g.Node(planner.Key("platform", "storage.azure.com", "StorageAccount", "teamastorage"))
	rg := g.Node(planner.Key("platform", "resources.azure.com", "ResourceGroup", "team-a-rg"))
	rgBody := func(state string) json.RawMessage {
		return json.RawMessage(`{"id":"` + rg.ARMID + `","name":"team-a-rg","location":"westeurope","properties":{"provisioningState":"` + state + `"}}`)
	}
	observed := planner.Observed{
		strings.ToLower(sa.ARMID): json.RawMessage(`{"id":"` + sa.ARMID + `","name":"teamastorage","kind":"StorageV2","location":"westeurope","sku":{"name":"Standard_GRS"},"properties":{"provisioningState":"Succeeded"}}`),
		strings.ToLower(rg.ARMID): rgBody("Succeeded"),
	}
	for _, why := range []string{"", "state rebuilt"} {
		p, err := g.Plan(planner.Input{Observed: observed, AdoptWithoutWrite: why})
		if err != nil {
			t.Fatal(err)
		}
		r := p.Get(rg.Key())
		if got := r.Action == planner.Adopt && r.NoWrite && r.Request == nil && r.Reason == planner.ReasonAdoptNoWrite(why); got != (why != "") {
			t.Errorf("marker %q: resource group planned %s, noWrite %v, request %v (%s)", why, r.Action, r.NoWrite, r.Request != nil, r.Reason)
		}
		s := p.Get(sa.Key())
		if s.Action != planner.Adopt || s.NoWrite || s.Request == nil || len(s.Changes) != 1 {
			t.Errorf("marker %q: storage account (sku differs) planned %s, noWrite %v, changes %v", why, s.Action, s.NoWrite, s.Changes)
		}
		if why != "" && s.Reason != "state rebuilt, but Azure differs from the manifest in 1 field: its manifest is PUT over it" {
			t.Errorf("storage account's reason: %q", s.Reason)
		}
	}
	observed[strings.ToLower(rg.ARMID)] = rgBody("Failed")
	p, err := g.Plan(planner.Input{Observed: observed, AdoptWithoutWrite: "state rebuilt"})
	if err != nil {
		t.Fatal(err)
	}
	if r := p.Get(rg.Key()); r.NoWrite || r.Request == nil || !strings.Contains(r.Reason, "provisioningState is Failed") {
		t.Errorf("a failed resource group planned noWrite %v (%s), want a PUT", r.NoWrite, r.Reason)
	}
}

// TestRefusedForASOIsNoFailedApply: a run that refused a resource because an
// ASO object manages it sent nothing; what was applied before (an import's
// adoption) stands, so the next plan has nothing to retry, while a real
// failure of the same resource is retried.
func TestRefusedForASOIsNoFailedApply(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, _ := g.Plan(planner.Input{})
	outs := planner.Outputs{planner.OutputKey("platform", false, "team-a-identity-settings", "principalId"): "aaaaaaaa-0000-0000-0000-000000000001"}
	for _, tc := range []struct {
		reason string
		want   planner.Action
	}{
		{planner.ReasonManagedByASO, planner.NoOp},
		{"BadRequest", planner.Update},
	} {
		prior := applied(t, p)
		key := p.Resources[0].Key()
		rec := prior[key]
		rec.Ready = record.Condition{Type: "Ready", Status: "False", Reason: tc.reason}
		prior[key] = rec
		next, err := g.Plan(planner.Input{Prior: prior, Outputs: outs})
		if err != nil {
			t.Fatal(err)
		}
		if got := next.Get(key); got.Action != tc.want {
			t.Errorf("last run refused %s with reason %s: planned %s (%s), want %s", key, tc.reason, got.Action, got.Reason, tc.want)
		}
	}
}

// TestRetryAdoptedWithoutWrite: while the state adopts what Azure holds (an
// import), a resource whose last run did not succeed with the same request
// (skipped while ASO managed its owner) is adopted without a write when
// Azure holds its manifest; without the mark it is sent again.
func TestRetryAdoptedWithoutWrite(t *testing.T) {
	g := build(t, map[string]string{"platform/team-a.yaml": onboarding})
	p, _ := g.Plan(planner.Input{})
	rg := g.Node(planner.Key("platform", "resources.azure.com", "ResourceGroup", "team-a-rg"))
	observed := planner.Observed{strings.ToLower(rg.ARMID): json.RawMessage(`{"id":"` + rg.ARMID +
		`","name":"team-a-rg","location":"westeurope","properties":{"provisioningState":"Succeeded"}}`)}
	prior := applied(t, p)
	rec := prior[rg.Key()]
	rec.Ready = record.Condition{Type: "Ready", Status: "False", Reason: "WaitingForOwner"}
	prior[rg.Key()] = rec
	for _, why := range []string{"", "import"} {
		got, err := g.Plan(planner.Input{Prior: prior, Observed: observed, AdoptWithoutWrite: why})
		if err != nil {
			t.Fatal(err)
		}
		r := got.Get(rg.Key())
		adopted := r.Action == planner.Adopt && r.NoWrite && r.Request == nil
		if adopted != (why != "") {
			t.Errorf("mark %q: planned %s (noWrite %v, %s)", why, r.Action, r.NoWrite, r.Reason)
		}
		if why == "" && (r.Action != planner.Update || r.Reason != "last apply did not succeed: retry") {
			t.Errorf("without the mark: %s %q, want the retry", r.Action, r.Reason)
		}
	}
	// Azure differing from the manifest keeps the retry's PUT.
	observed[strings.ToLower(rg.ARMID)] = json.RawMessage(`{"id":"` + rg.ARMID + `","name":"team-a-rg","location":"northeurope","properties":{"provisioningState":"Succeeded"}}`)
	got, err := g.Plan(planner.Input{Prior: prior, Observed: observed, AdoptWithoutWrite: "import"})
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Get(rg.Key()); r.Action != planner.Update || r.NoWrite {
		t.Errorf("Azure differs: planned %s (noWrite %v, %s), want the retry's PUT", r.Action, r.NoWrite, r.Reason)
	}
}
