package e2e_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source/render"
	"github.com/gitaso/gitaso/state"
)

// substSecretFiles is a Secret of the repository feeding substitution and a
// resource group whose tags take its value whole, inside a longer string,
// and a value of a ConfigMap (not secret, shown).
func substSecretFiles(token string) map[string]string {
	return map[string]string{
		"tokens.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: tokens, namespace: platform}\nstringData:\n  TOKEN: \"" + token + "\"\n",
		"vars.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vars, namespace: platform}\ndata:\n  TEAM: \"team-visible\"\n",
		"rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata: {name: secret-rg, namespace: ops}\n" +
			"spec:\n  location: westeurope\n  tags:\n    token: \"${TOKEN}\"\n    mixed: \"pre-${TOKEN}-post\"\n    team: \"${TEAM}\"\n",
	}
}

// TestSubstitutedSecretMaskedEverywhere: a value --substitute-from took
// from a Secret is secret wherever it lands. Placed in tags (whole, and
// inside a longer string), it is masked in the text, JSON and markdown
// plans, the saved plan file, /api/v1/plan, the resource's appliedBody in
// the API, the log and the state file's bytes, while the PUT to Azure
// carries it; a new value of the Secret is an update, shown masked; so is a
// change made in Azure.
func TestSubstitutedSecretMaskedEverywhere(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	const first, second, third = "s3cr3t-First-4f9a", "s3cr3t-Second-77b1", "s3cr3t-Third-0c2e"
	values := []string{first, second, third}
	const label = "(sensitive value from Secret platform/tokens)"
	rnd, err := render.New(render.Options{Kustomize: true, Substitute: true, SubstituteFrom: []render.Ref{
		{Kind: "Secret", Namespace: "platform", Name: "tokens"}, {Kind: "ConfigMap", Namespace: "platform", Name: "vars"}}})
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	e := newEnvWith(t, envOptions{renderer: rnd, log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	srv := httptest.NewServer(api.New(e.db, api.Options{Logger: slog.New(slog.DiscardHandler)}))
	t.Cleanup(srv.Close)
	noSecret := func(what string, b []byte) {
		t.Helper()
		for _, v := range values {
			if bytes.Contains(b, []byte(v)) {
				t.Errorf("%s shows the Secret's value %q:\n%s", what, v, b)
			}
		}
	}
	forms := func(p *planner.Plan) (text, js, md []byte) {
		t.Helper()
		var a, b, c bytes.Buffer
		if err := planner.RenderText(&a, p, planner.TextOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := planner.RenderJSON(&b, p); err != nil {
			t.Fatal(err)
		}
		if err := planner.RenderMarkdown(&c, p); err != nil {
			t.Fatal(err)
		}
		return a.Bytes(), b.Bytes(), c.Bytes()
	}
	get := func(path string) []byte {
		t.Helper()
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s\n%s", path, res.Status, b)
		}
		return b
	}
	rgID := e.rgID("secret-rg")
	azureTags := func() map[string]string {
		t.Helper()
		b, err := e.cli.Get(t.Context(), rgID, "2020-06-01")
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Tags map[string]string `json:"tags"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		return doc.Tags
	}

	// Create: the plan in every form, saved, applied from the file.
	e.commit("a group tagged from a Secret", substSecretFiles(first))
	sp := e.save()
	var saved bytes.Buffer
	if _, err := sp.WriteTo(&saved); err != nil {
		t.Fatal(err)
	}
	noSecret("the saved plan file", saved.Bytes())
	text, js, md := forms(sp.Plan)
	noSecret("the text plan", text)
	noSecret("the JSON plan", js)
	noSecret("the markdown plan", md)
	for _, want := range []string{"+ /tags/token = " + label, "+ /tags/mixed = " + label, `+ /tags/team = "team-visible"`} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("the text plan lacks %q:\n%s", want, text)
		}
	}
	r := planned(t, sp.Plan, "ops", "resources.azure.com", "ResourceGroup", "secret-rg")
	if r.Sensitive["/tags/token"] != "Secret platform/tokens" || r.Sensitive["/tags/mixed"] != "Secret platform/tokens" || len(r.Sensitive) != 2 {
		t.Errorf("sensitive fields %v, want /tags/token and /tags/mixed from Secret platform/tokens", r.Sensitive)
	}
	if _, err := e.rec.ApplySaved(t.Context(), sp, false); err != nil {
		t.Fatalf("apply the saved plan: %v", err)
	}
	if tags := azureTags(); tags["token"] != first || tags["mixed"] != "pre-"+first+"-post" || tags["team"] != "team-visible" {
		t.Errorf("Azure holds tags %v: the PUT must carry the real values", tags)
	}
	noSecret("/api/v1/plan", get("/api/v1/plan"))
	res := get("/api/v1/resources/ops/ResourceGroup/secret-rg")
	noSecret("the resource in the API", res)
	if !bytes.Contains(res, []byte(`"token":"`+label+`"`)) {
		t.Errorf("the API's appliedBody does not show the label:\n%s", res)
	}

	// The Secret's value changes: an update, masked.
	e.commit("a new token", substSecretFiles(second))
	rep := e.run(true)
	r = planned(t, rep.Plan, "ops", "resources.azure.com", "ResourceGroup", "secret-rg")
	if r.Action != planner.Update {
		t.Fatalf("a new Secret value planned as %s, want update", r.Action)
	}
	for _, p := range []string{"/tags/token", "/tags/mixed"} {
		if !hasSensitiveChange(r.Changes, p) {
			t.Errorf("no masked change at %s: %+v", p, r.Changes)
		}
	}
	text, js, md = forms(rep.Plan)
	noSecret("the text plan of the update", text)
	noSecret("the JSON plan of the update", js)
	noSecret("the markdown plan of the update", md)
	if !bytes.Contains(text, []byte("~ /tags/token = "+label)) {
		t.Errorf("the update's text plan lacks the masked change:\n%s", text)
	}
	if tags := azureTags(); tags["token"] != second {
		t.Errorf("Azure holds token %q after the update", tags["token"])
	}
	noSecret("/api/v1/plan after the update", get("/api/v1/plan"))
	noSecret("the resource in the API after the update", get("/api/v1/resources/ops/ResourceGroup/secret-rg"))

	// Another field changes, the Secret's value does not: its fields are no
	// change (the state keeps their hashes).
	files := substSecretFiles(second)
	files["vars.yaml"] = strings.Replace(files["vars.yaml"], "team-visible", "team-renamed", 1)
	e.commit("a new team", files)
	rep = e.run(true)
	r = planned(t, rep.Plan, "ops", "resources.azure.com", "ResourceGroup", "secret-rg")
	if r.Action != planner.Update || len(r.Changes) != 1 || r.Changes[0].Path != "/tags/team" || r.Changes[0].Sensitive {
		t.Errorf("a plain tag changed: %s %+v, want an update of /tags/team only", r.Action, r.Changes)
	}

	// Unchanged: no-op (the hash covers the value).
	if rep := e.run(true); planned(t, rep.Plan, "ops", "resources.azure.com", "ResourceGroup", "secret-rg").Action != planner.NoOp {
		t.Errorf("an unchanged Secret value is not a no-op")
	}

	// Changed in Azure behind gitaso's back: drift, masked both ways.
	e.mustPut(rgID, "2020-06-01", `{"location":"westeurope","tags":{"token":"`+third+`","mixed":"pre-`+second+`-post","team":"team-renamed"}}`)
	rep, err = e.rec.Once(t.Context(), reconcile.Options{Trigger: "test", Refresh: true, All: true}) // every resource read
	if err != nil {
		t.Fatal(err)
	}
	r = planned(t, rep.Plan, "ops", "resources.azure.com", "ResourceGroup", "secret-rg")
	if r.Action != planner.Drift || !hasSensitiveChange(r.Changes, "/tags/token") || hasSensitiveChange(r.Changes, "/tags/mixed") {
		t.Errorf("a token changed in Azure: %s %+v, want drift with a masked change at /tags/token only", r.Action, r.Changes)
	}
	text, js, md = forms(rep.Plan)
	noSecret("the drift's text plan", text)
	noSecret("the drift's JSON plan", js)
	noSecret("the drift's markdown plan", md)
	if tags := azureTags(); tags["token"] != second {
		t.Errorf("the drift was not corrected: token %q", tags["token"])
	}

	noSecret("the log", []byte(logs.String()))
	stored, err := e.db.Plan()
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the stored plan", stored)
	file := e.db.Path()
	if err := e.db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	noSecret("the state file", raw)
	if !strings.Contains(string(raw), label) {
		t.Errorf("the state file does not hold the label: the scan would not see the applied body")
	}
}

func hasSensitiveChange(cs []planner.Change, path string) bool {
	for _, c := range cs {
		if c.Path == path && c.Sensitive && c.Before == nil && c.After == nil {
			return true
		}
	}
	return false
}

// TestRecordedSecretValueMaskedAfterUpgrade: a resource whose applied body
// an earlier gitaso recorded with a substituted Secret value in clear has it
// masked by the next run, though nothing is applied (a no-op).
func TestRecordedSecretValueMaskedAfterUpgrade(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	const token = "s3cr3t-Legacy-51d3"
	rnd, err := render.New(render.Options{Kustomize: true, Substitute: true, SubstituteFrom: []render.Ref{
		{Kind: "Secret", Namespace: "platform", Name: "tokens"}, {Kind: "ConfigMap", Namespace: "platform", Name: "vars"}}})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvWith(t, envOptions{renderer: rnd})
	e.commit("a group tagged from a Secret", substSecretFiles(token))
	e.run(false)
	r := e.resource("ops", "resources.azure.com", "ResourceGroup", "secret-rg")
	if bytes.Contains(r.AppliedBody, []byte(token)) {
		t.Fatalf("applied body shows the value: %s", r.AppliedBody)
	}
	// As an earlier gitaso recorded it.
	r.AppliedBody = []byte(`{"location":"westeurope","tags":{"mixed":"pre-` + token + `-post","team":"team-visible","token":"` + token + `"}}`)
	if err := e.db.Update(func(w *state.Writer) error { return w.PutResource(r) }); err != nil {
		t.Fatal(err)
	}
	e.emu.ResetStats()
	rep := e.run(false)
	if a := planned(t, rep.Plan, "ops", "resources.azure.com", "ResourceGroup", "secret-rg").Action; a != planner.NoOp {
		t.Errorf("planned %s, want no-op", a)
	}
	if w := e.writes(); len(w) != 0 {
		t.Errorf("writes to Azure %v, want none", w)
	}
	r = e.resource("ops", "resources.azure.com", "ResourceGroup", "secret-rg")
	const label = "(sensitive value from Secret platform/tokens)"
	if bytes.Contains(r.AppliedBody, []byte(token)) || !bytes.Contains(r.AppliedBody, []byte(`"token":"`+label+`"`)) {
		t.Errorf("applied body after the run: %s, want the value masked", r.AppliedBody)
	}
}
