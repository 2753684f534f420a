package api_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// seedUnits stores four units (one failed with its errors, one waiting for
// it, one healthy, one ignored release) and gives two resources of the
// seeded state a unit: team-a's identity and storage account are the
// Kustomization team-a/apps's.
func seedUnits(t *testing.T, db *state.DB) {
	t.Helper()
	failed := record.Unit{Kind: "Kustomization", Namespace: "team-a", Name: "apps", File: "clusters/prod/team-a.yaml", Line: 3,
		Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusFalse, Reason: "BuildFailed",
			Message: "kustomize build failed", LastTransitionTime: t0},
		LastAppliedRevision: "1111111111111111111111111111111111111111", LastAttemptedRevision: "2222222222222222222222222222222222222222",
		Errors:    []string{"teams/a/kustomization.yaml:7: patches[0]: no object matches the patch's target"},
		Objects:   []string{"team-a/managedidentity.azure.com/UserAssignedIdentity/app-id", "team-a/storage.azure.com/StorageAccount/appstore"},
		AppliedAt: t0.Add(-time.Hour), UpdatedAt: t0}
	waiting := record.Unit{Kind: "HelmRelease", Namespace: "team-a", Name: "db", DependsOn: []string{"Kustomization/team-a/apps"},
		Ready: record.Condition{Type: record.ConditionReady, Status: record.StatusFalse, Reason: "DependencyNotReady",
			Message: "dependency 'Kustomization/team-a/apps' is not ready"}}
	healthy := record.Unit{Kind: "Kustomization", Namespace: "flux-system", Name: "platform",
		Ready:               record.Condition{Type: record.ConditionReady, Status: record.StatusTrue, Reason: "ReconciliationSucceeded"},
		LastAppliedRevision: "2222222222222222222222222222222222222222", AppliedAt: t0}
	ignored := record.Unit{Kind: "HelmRelease", Namespace: "cert-manager", Name: "cert-manager", Ignored: true}
	var rs []record.Resource
	for _, key := range failed.Objects {
		r, ok, err := db.Resource(key)
		if err != nil || !ok {
			t.Fatalf("resource %s: %v %v", key, ok, err)
		}
		r.Unit = failed.ID()
		rs = append(rs, r)
	}
	err := db.Update(func(w *state.Writer) error {
		for _, u := range []record.Unit{failed, waiting, healthy, ignored} {
			if err := w.PutUnit(u); err != nil {
				return err
			}
		}
		for _, r := range rs {
			if err := w.PutResource(r); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func unitIDs(us []record.Unit) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.ID())
	}
	return out
}

func TestListUnits(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	seedUnits(t, f.db)
	all := []string{"HelmRelease/cert-manager/cert-manager", "HelmRelease/team-a/db", "Kustomization/flux-system/platform", "Kustomization/team-a/apps"}
	tests := []struct {
		query string
		want  []string
	}{
		{"", all},
		{"?kind=kustomization", []string{"Kustomization/flux-system/platform", "Kustomization/team-a/apps"}},
		{"?kind=HelmRelease&namespace=team-a", []string{"HelmRelease/team-a/db"}},
		{"?ready=false", []string{"HelmRelease/team-a/db", "Kustomization/team-a/apps"}},
		{"?ready=TRUE", []string{"Kustomization/flux-system/platform"}},
		{"?ready=unknown", []string{"HelmRelease/cert-manager/cert-manager"}},
		{"?namespace=nobody", []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			code, _, body := f.do(t, "GET", "/api/v1/units"+tt.query, "")
			if code != 200 {
				t.Fatalf("status %d: %s", code, body)
			}
			l := decode[api.UnitList](t, body)
			if d := cmp.Diff(tt.want, unitIDs(l.Items)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			// The counts are over every unit, whatever the filters.
			if d := cmp.Diff(map[string]int{"True": 1, "False": 2, "Unknown": 1}, l.Ready); d != "" || l.Total != 4 || l.Ignored != 1 {
				t.Errorf("total %d, ignored %d, ready (-want +got):\n%s", l.Total, l.Ignored, d)
			}
		})
	}
	_, _, body := f.do(t, "GET", "/api/v1/units?kind=helmrelease&namespace=cert-manager", "")
	if u := decode[api.UnitList](t, body).Items[0]; u.Ready.Type != "Ready" || u.Ready.Status != "Unknown" {
		t.Errorf("a unit without a Ready condition yet shows %+v, want Ready Unknown", u.Ready)
	}
	for _, q := range []string{"?ready=maybe", "?kind=StorageAccount"} {
		code, _, body := f.do(t, "GET", "/api/v1/units"+q, "")
		if code != 400 || decode[api.ErrorBody](t, body).Error.Code != api.CodeBadRequest {
			t.Errorf("GET /api/v1/units%s: %d %s, want 400 bad_request", q, code, body)
		}
	}
	// No unit at all (a repository without Flux objects): an empty list.
	empty := newFixture(t, api.Options{}, true)
	code, _, body := empty.do(t, "GET", "/api/v1/units", "")
	if l := decode[api.UnitList](t, body); code != 200 || l.Items == nil || len(l.Items) != 0 || l.Total != 0 {
		t.Errorf("no units: %d %s", code, body)
	}
	if !strings.Contains(string(body), `"items":[]`) {
		t.Errorf("items must be a JSON array: %s", body)
	}
}

func TestGetUnit(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	seedUnits(t, f.db)
	code, _, body := f.do(t, "GET", "/api/v1/units/Kustomization/team-a/apps", "")
	if code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
	u := decode[api.UnitDetail](t, body)
	if u.ID() != "Kustomization/team-a/apps" || u.Ready.Reason != "BuildFailed" || u.LastAppliedRevision != "1111111111111111111111111111111111111111" ||
		len(u.Errors) != 1 || !strings.HasPrefix(u.Errors[0], "teams/a/kustomization.yaml:7: ") || u.File != "clusters/prod/team-a.yaml" {
		t.Errorf("unit %+v", u.Unit)
	}
	var got []string
	for _, r := range u.Resources {
		got = append(got, r.Namespace+"/"+r.Group+"/"+r.Kind+"/"+r.Name)
		if r.Unit != "Kustomization/team-a/apps" || r.AppliedBody != nil {
			t.Errorf("resource %s: unit %q, appliedBody %s: want the unit and no body (as the list)", r.Name, r.Unit, r.AppliedBody)
		}
	}
	if d := cmp.Diff(u.Objects, got); d != "" {
		t.Errorf("resources of the unit (-want +got):\n%s", d)
	}
	// The kind in any case, as ?kind= takes it.
	if code, _, _ := f.do(t, "GET", "/api/v1/units/helmrelease/team-a/db", ""); code != 200 {
		t.Errorf("GET helmrelease/team-a/db: %d", code)
	}
	code, _, body = f.do(t, "GET", "/api/v1/units/HelmRelease/team-a/db", "")
	if u := decode[api.UnitDetail](t, body); code != 200 || u.Resources == nil || len(u.Resources) != 0 || u.Ready.Reason != "DependencyNotReady" {
		t.Errorf("a unit without resources: %d %s", code, body)
	}
	for _, p := range []string{"/api/v1/units/Kustomization/team-a/nope", "/api/v1/units/StorageAccount/team-a/apps"} {
		code, _, body := f.do(t, "GET", p, "")
		if code != 404 || decode[api.ErrorBody](t, body).Error.Code != api.CodeNotFound {
			t.Errorf("GET %s: %d %s, want 404 not_found", p, code, body)
		}
	}
	if code, _, _ := f.do(t, "POST", "/api/v1/units", ""); code != 405 {
		t.Errorf("POST /api/v1/units: %d, want 405", code)
	}
}

// A resource's JSON names its unit, in the list and the single GET.
func TestResourceShowsUnit(t *testing.T) {
	f := newFixture(t, api.Options{}, true)
	seedUnits(t, f.db)
	for _, p := range []string{"/api/v1/resources?namespace=team-a&kind=StorageAccount", "/api/v1/resources?namespace=team-a&kind=StorageAccount&limit=10"} {
		_, _, body := f.do(t, "GET", p, "")
		if l := decode[list](t, body); len(l.Items) != 1 || l.Items[0].Unit != "Kustomization/team-a/apps" {
			t.Errorf("GET %s: %s, want unit Kustomization/team-a/apps", p, body)
		}
	}
	_, _, body := f.do(t, "GET", "/api/v1/resources/team-a/storage.azure.com/StorageAccount/appstore", "")
	if r := decode[api.Resource](t, body); r.Unit != "Kustomization/team-a/apps" {
		t.Errorf("single GET: unit %q", r.Unit)
	}
	_, _, body = f.do(t, "GET", "/api/v1/resources/platform/resources.azure.com/ResourceGroup/rg-team-a", "")
	if strings.Contains(string(body), `"unit"`) {
		t.Errorf("a resource outside units has a unit: %s", body)
	}
}

func TestUnitMetrics(t *testing.T) {
	f := newFixture(t, api.Options{Metrics: metrics.New()}, true)
	seedUnits(t, f.db)
	samples, types := scrape(t, f.srv.URL)
	want := map[string]float64{
		`gitaso_unit_ready{kind="Kustomization",name="apps",namespace="team-a",reason="BuildFailed"}`:                      0,
		`gitaso_unit_ready{kind="HelmRelease",name="db",namespace="team-a",reason="DependencyNotReady"}`:                   0,
		`gitaso_unit_ready{kind="Kustomization",name="platform",namespace="flux-system",reason="ReconciliationSucceeded"}`: 1,
		`gitaso_unit_ready{kind="HelmRelease",name="cert-manager",namespace="cert-manager",reason=""}`:                     0,
		`gitaso_units{ready="True"}`:    1,
		`gitaso_units{ready="False"}`:   2,
		`gitaso_units{ready="Unknown"}`: 1,
		`gitaso_unit_last_applied_timestamp_seconds{kind="Kustomization",name="apps",namespace="team-a"}`:                                                                        float64(t0.Add(-time.Hour).Unix()),
		`gitaso_unit_last_applied_timestamp_seconds{kind="HelmRelease",name="db",namespace="team-a"}`:                                                                            0,
		`gitaso_unit_info{kind="Kustomization",last_applied_revision="1111111111111111111111111111111111111111",name="apps",namespace="team-a",ready="False",suspended="false"}`: 1,
	}
	for k, v := range want {
		if got, ok := samples[k]; !ok || got != v {
			t.Errorf("%s = %v (present %v), want %v", k, got, ok, v)
		}
	}
	for _, name := range []string{"gitaso_unit_ready", "gitaso_units", "gitaso_unit_last_applied_timestamp_seconds", "gitaso_unit_info"} {
		if types[name] != "gauge" {
			t.Errorf("TYPE %s = %q, want gauge", name, types[name])
		}
	}
	// A unit that recovers is Ready at the next scrape, its failed series gone.
	err := f.db.Update(func(w *state.Writer) error {
		return w.PutUnit(record.Unit{Kind: "Kustomization", Namespace: "team-a", Name: "apps",
			Ready:               record.Condition{Type: record.ConditionReady, Status: record.StatusTrue, Reason: "ReconciliationSucceeded"},
			LastAppliedRevision: "3333333333333333333333333333333333333333", AppliedAt: t0})
	})
	if err != nil {
		t.Fatal(err)
	}
	samples, _ = scrape(t, f.srv.URL)
	if samples[`gitaso_unit_ready{kind="Kustomization",name="apps",namespace="team-a",reason="ReconciliationSucceeded"}`] != 1 ||
		samples[`gitaso_units{ready="False"}`] != 1 {
		t.Errorf("after recovery: %v", samples)
	}
	if _, ok := samples[`gitaso_unit_ready{kind="Kustomization",name="apps",namespace="team-a",reason="BuildFailed"}`]; ok {
		t.Error("the failed series stays after the unit recovered")
	}
	// No units: the counts are 0, no per-unit series.
	empty := newFixture(t, api.Options{Metrics: metrics.New()}, true)
	samples, _ = scrape(t, empty.srv.URL)
	for k := range samples {
		if strings.HasPrefix(k, "gitaso_unit_") {
			t.Errorf("without units: %s", k)
		}
	}
	if v, ok := samples[`gitaso_units{ready="False"}`]; !ok || v != 0 {
		t.Errorf(`without units: gitaso_units{ready="False"} = %v (present %v), want 0`, v, ok)
	}
}

// BenchmarkUnits: GET /api/v1/units, one unit's page and a scrape of
// /metrics over a state of 80 units (40 teams, a Kustomization and a
// HelmRelease each) and 4,000 resources, 50 per Kustomization.
func BenchmarkUnits(b *testing.B) {
	db, err := state.Open(filepath.Join(b.TempDir(), "gitaso.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(w *state.Writer) error {
		for team := range 40 {
			ns := fmt.Sprintf("team-%02d", team)
			ks := record.Unit{Kind: "Kustomization", Namespace: ns, Name: "apps",
				Ready: record.Condition{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"}, LastAppliedRevision: "rev", AppliedAt: t0}
			if team < 3 {
				ks.Ready = record.Condition{Type: "Ready", Status: "False", Reason: "BuildFailed"}
				ks.Errors = []string{ns + "/kustomization.yaml:7: patches[0]: no object matches the patch's target"}
			}
			for i := range 50 {
				r := resource(ns, "storage.azure.com", "StorageAccount", fmt.Sprintf("acct%02d", i), "True", "", "Succeeded")
				r.Unit = ks.ID()
				ks.Objects = append(ks.Objects, r.Key())
				if err := w.PutResource(r); err != nil {
					return err
				}
			}
			hr := record.Unit{Kind: "HelmRelease", Namespace: ns, Name: "db",
				Ready: record.Condition{Type: "Ready", Status: "True", Reason: "ReconciliationSucceeded"}}
			for _, u := range []record.Unit{ks, hr} {
				if err := w.PutUnit(u); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(api.New(db, api.Options{Metrics: metrics.New(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	for _, p := range []string{"/api/v1/units", "/api/v1/units/Kustomization/team-07/apps", "/metrics"} {
		b.Run(strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_"), func(b *testing.B) {
			for b.Loop() {
				resp, err := srv.Client().Get(srv.URL + p)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("%s: %d", p, resp.StatusCode)
				}
				b.SetBytes(n)
			}
		})
	}
}
