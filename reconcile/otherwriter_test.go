package reconcile_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/syncbuf"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// daemon is one gitaso with its own directory and state file.
type daemon struct {
	rec *reconcile.Reconciler
	db  *state.DB
	api *httptest.Server
	log *syncbuf.Buffer
}

func newDaemon(t *testing.T, env *emutest.Env, team string) *daemon {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\n"+
		"metadata:\n  name: shared-rg\n  namespace: ops\nspec:\n  location: westeurope\n  tags:\n    team: "+team+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred   // both daemons use the same credential
	everyRun(1000)(&cfg)    // every resync asks the Activity Log
	cfg.ActivityLogSkew = 0 // the emulator's log and this clock are one
	m := metrics.New()
	cfg.Metrics = m
	d := &daemon{db: db, log: &syncbuf.Buffer{}}
	d.rec = reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, slog.New(slog.NewTextHandler(d.log, nil)))
	d.api = httptest.NewServer(api.New(db, api.Options{Metrics: m, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	t.Cleanup(d.api.Close)
	return d
}

func (d *daemon) run(t *testing.T, opts reconcile.Options) *reconcile.Report {
	t.Helper()
	rep, err := d.rec.Once(context.Background(), opts)
	if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("%s run: %v %+v", opts.Trigger, err, rep.Run)
	}
	return rep
}

// resync is the loop's periodic resync.
func (d *daemon) resync(t *testing.T) *reconcile.Report {
	t.Helper()
	return d.run(t, reconcile.Options{Trigger: "refresh", Refresh: true})
}

// resource is GET /api/v1/resources/ops/ResourceGroup/shared-rg.
func (d *daemon) resource(t *testing.T) api.Resource {
	t.Helper()
	resp, err := http.Get(d.api.URL + "/api/v1/resources/ops/ResourceGroup/shared-rg")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out api.Resource
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET resource: %d %v", resp.StatusCode, err)
	}
	return out
}

func (d *daemon) gauge(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get(d.api.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	t.Fatalf("/metrics has no %s", name)
	return ""
}

// TestOtherWriterWithOwnPrincipal: two daemons with separate state files
// and the same credential fight over one resource group. The one whose
// resync reads the Activity Log sees a write by its own principal that it
// did not make, and says so: a warning naming the resource and the caller,
// otherWriter on the resource in the API, gitaso_other_writer_resources 1
// (before, it was routine drift and nothing else). Its own correction is not
// taken for another writer, nor is a write by another principal (plain
// drift); once a log read shows no such write, the mark goes.
func TestOtherWriterWithOwnPrincipal(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t, emutest.Emulator(emulator.WithoutThrottling()),
		emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
	a := newDaemon(t, env, "a")
	a.run(t, reconcile.Options{Trigger: "startup"})
	a.resync(t) // the first resync reads in full: the next ones ask the log
	if rep := a.resync(t); rep.Plan.HasChanges() {
		t.Fatalf("idle resync plans %v", rep.Plan.Summary())
	}
	if got := a.gauge(t, "gitaso_other_writer_resources"); got != "0" {
		t.Fatalf("gitaso_other_writer_resources %s before another writer", got)
	}

	b := newDaemon(t, env, "b")
	b.run(t, reconcile.Options{Trigger: "startup", Refresh: true, All: true}) // adopts the group, tags it team: b

	rep := a.resync(t)
	if rep.Plan.Summary()[planner.Drift] != 1 {
		t.Errorf("resync after the other daemon's write: %v, want the drift corrected", rep.Plan.Summary())
	}
	res := a.resource(t)
	ow := res.OtherWriter
	if ow == nil || ow.Caller == "" || ow.Writes < 1 ||
		!strings.EqualFold(ow.Operation, "Microsoft.Resources/subscriptions/resourceGroups/write") || ow.At.IsZero() {
		t.Fatalf("GET resource: otherWriter %+v, want the other daemon's write with gitaso's principal", ow)
	}
	if got := a.gauge(t, "gitaso_other_writer_resources"); got != "1" {
		t.Errorf("gitaso_other_writer_resources %s, want 1", got)
	}
	if l := a.log.String(); !strings.Contains(l, "another writer uses gitaso's principal") || !strings.Contains(l, "ops/resources.azure.com/ResourceGroup/shared-rg") ||
		!strings.Contains(l, "caller="+ow.Caller) {
		t.Errorf("no warning naming the resource and the caller:\n%s", l)
	}

	// A's own correction, and a change by someone else, are no other
	// writer with gitaso's principal: the next log read clears the mark.
	var body map[string]any
	raw, err := env.Client.Get(context.Background(), res.ARMID, "2020-06-01")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	body["tags"] = map[string]any{"team": "portal"}
	if err := env.Emu.WriteOutOfBand(res.ARMID, body, "someone@example.com", "2020-06-01"); err != nil {
		t.Fatal(err)
	}
	if rep := a.resync(t); rep.Plan.Summary()[planner.Drift] != 1 {
		t.Errorf("resync after a portal change: %v, want the drift corrected", rep.Plan.Summary())
	}
	t.Logf("other writer: %+v", ow)
	if ow := a.resource(t).OtherWriter; ow != nil {
		t.Errorf("otherWriter %+v after a log read with only gitaso's own write and another principal's", ow)
	}
	if got := a.gauge(t, "gitaso_other_writer_resources"); got != "0" {
		t.Errorf("gitaso_other_writer_resources %s after the mark cleared, want 0", got)
	}
	if rec, ok, _ := a.db.Resource(record.ResourceKey("ops", "resources.azure.com", "ResourceGroup", "shared-rg")); !ok || rec.OtherWriter != nil {
		t.Errorf("state: %v %+v, want the resource without the mark", ok, rec.OtherWriter)
	}
}
