package executor_test

import (
	"context"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/source"
)

// emu is the in-process ARM emulator with one Owner principal, and an
// executor whose every credential is that principal.
type emu struct {
	e   *emulator.Emulator
	cli *azure.Client
	sub string
}

type oneClient struct{ c *azure.Client }

func (o oneClient) For(context.Context, string) (*azure.Client, error) { return o.c, nil }

func newEmu(t testing.TB) *emu { return newEmuVia(t, nil) }

// newEmuVia puts front (when not nil) between the ARM client and the
// emulator: an HTTPS server of its own whose handler gets the emulator.
func newEmuVia(t testing.TB, front func(arm http.Handler) http.Handler) *emu {
	t.Helper()
	e, err := emulator.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, e.CACertPEM(), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "cloud.json")
	if err := os.WriteFile(cfg, e.CloudConfigJSON(caFile), 0o600); err != nil {
		t.Fatal(err)
	}
	cloud, err := azure.LoadCloud(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if front != nil {
		srv := httptest.NewUnstartedServer(front(e))
		srv.StartTLS()
		t.Cleanup(srv.Close)
		pemCert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
		if err := os.WriteFile(caFile, append(e.CACertPEM(), pemCert...), 0o600); err != nil {
			t.Fatal(err)
		}
		cloud.ARMEndpoint = srv.URL
	}
	sp, err := e.AddServicePrincipal("platform")
	if err != nil {
		t.Fatal(err)
	}
	sub := e.SubscriptionID()
	if err := e.AssignRole(sp.ObjectID, "Owner", "/subscriptions/"+sub); err != nil {
		t.Fatal(err)
	}
	cred, err := azure.CredentialFromSecret("platform/aso-credential", map[string]string{
		"AZURE_SUBSCRIPTION_ID": sub, "AZURE_TENANT_ID": e.TenantID(), "AZURE_CLIENT_ID": sp.ClientID, "AZURE_CLIENT_SECRET": sp.Secret})
	if err != nil {
		t.Fatal(err)
	}
	o := azure.DefaultOptions()
	o.PollInterval = 10 * time.Millisecond
	o.Retry.RetryDelay = 10 * time.Millisecond
	cli, err := azure.NewClients(cloud, o).For(cred)
	if err != nil {
		t.Fatal(err)
	}
	return &emu{e: e, cli: cli, sub: sub}
}

// plan builds a plan from YAML documents (no prior state, no ARM reads).
func (m *emu) plan(t testing.TB, docs ...string) *planner.Plan {
	t.Helper()
	_, p := m.graphPlan(t, docs...)
	return p
}

// graphPlan is plan with the graph it was made from (the secrets source).
func (m *emu) graphPlan(t testing.TB, docs ...string) (*planner.Graph, *planner.Plan) {
	t.Helper()
	objs, err := source.ParseFile("test.yaml", []byte(strings.Join(docs, "\n---\n")))
	if err != nil {
		t.Fatal(err)
	}
	g, err := planner.Build(&manifest.Snapshot{Revision: "test", Objects: objs}, planner.Options{SubscriptionID: m.sub})
	if err != nil {
		t.Fatal(err)
	}
	p, err := g.Plan(planner.Input{})
	if err != nil {
		t.Fatal(err)
	}
	return g, p
}

// apply applies docs and returns the result by resource name.
func (m *emu) apply(t testing.TB, docs ...string) map[string]*executor.ResourceResult {
	t.Helper()
	g, p := m.graphPlan(t, docs...)
	ex := executor.New(oneClient{m.cli}, executor.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	res, err := ex.Apply(context.Background(), p, planner.Values{Secrets: g})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*executor.ResourceResult{}
	for _, rr := range res.Resources {
		out[rr.Resource.Name] = rr
	}
	return out
}

// requests returns the emulator's logged requests whose path contains s.
func (m *emu) requests(s string) []emulator.LogEntry {
	var out []emulator.LogEntry
	for _, l := range m.e.RequestLog() {
		if strings.Contains(strings.ToLower(l.Path), strings.ToLower(s)) {
			out = append(out, l)
		}
	}
	return out
}

func mustOK(t testing.TB, rr *executor.ResourceResult) {
	t.Helper()
	if rr == nil {
		t.Fatal("no result")
	}
	if rr.Err != nil || (rr.Outcome != executor.Applied && rr.Outcome != executor.Observed) {
		t.Fatalf("%s: outcome %s, err %v, ready %+v", rr.Key, rr.Outcome, rr.Err, rr.Ready)
	}
}

const rg = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg
  namespace: team
spec:
  location: westeurope`
