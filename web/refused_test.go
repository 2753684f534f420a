package web_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
	"github.com/gitaso/gitaso/web"
)

// TestBrowserRefusedBanner: when the newest run refused its revision the
// page says which revision, its errors and the revision that stays applied;
// a later run that succeeds takes the banner away.
func TestBrowserRefusedBanner(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	if banner := element(t, dumpDOM(t, f.srv.URL+"/"), "section", `id="refused"`); !strings.Contains(banner, "hidden") || text(banner) != "" {
		t.Errorf("a refused banner without a refused run: %s", banner)
	}
	const applied, refused = "a11ed0000000000000000000000000000000000a", "bad0c0ffee000000000000000000000000000000"
	now := time.Now().UTC()
	if err := f.db.Update(func(w *state.Writer) error {
		if err := w.SetLastGoodRevision(applied); err != nil {
			return err
		}
		return w.PutRun(&record.Run{Revision: refused, Trigger: "interval", StartedAt: now.Add(-2 * time.Second), FinishedAt: now.Add(-time.Second),
			Outcome: record.OutcomeRefused,
			Error:   "revision refused: revision " + refused + " refused (2 errors):\napps/rg.yaml:7: ops/ResourceGroup/rg: ${LOCATION}: variable is not set\napps/sa.yaml:3: ops/StorageAccount/sa: spec.sku: required"})
	}); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, f.srv.URL+"/#resources")
	banner := element(t, dom, "section", `id="refused"`)
	if strings.Contains(banner[:strings.Index(banner, ">")], "hidden") {
		t.Fatalf("refused banner hidden: %s", banner)
	}
	b := text(banner)
	for _, want := range []string{"Revision " + refused[:12] + " is refused", "nothing of it is applied",
		"Revision " + applied[:12] + " stays applied", "apps/rg.yaml:7: ops/ResourceGroup/rg: ${LOCATION}: variable is not set",
		"apps/sa.yaml:3: ops/StorageAccount/sa: spec.sku: required"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	if err := f.db.Update(func(w *state.Writer) error {
		return w.PutRun(&record.Run{Revision: "c1ea0000", Trigger: "interval", StartedAt: now, FinishedAt: now.Add(time.Second), Outcome: record.OutcomeSucceeded})
	}); err != nil {
		t.Fatal(err)
	}
	if banner := element(t, dumpDOM(t, f.srv.URL+"/"), "section", `id="refused"`); !strings.Contains(banner, "hidden") {
		t.Errorf("the banner stays after a run succeeded: %s", banner)
	}
}

// TestBrowserRefusedBannerStands drives a real reconciler (a directory
// source, the ARM emulator): a refused commit is followed at once by a run
// that refreshes the last good revision and succeeds, the newest run on the
// page; the banner still shows the refusal, with the revision that stays
// applied. A fixing commit takes it away. Before the refusal was kept in
// state, the banner looked at the newest run only and never showed.
func TestBrowserRefusedBannerStands(t *testing.T) {
	chromiumPath(t)
	env := emutest.New(t)
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const rg = "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: page-rg\n  namespace: ops\nspec:\n  location: westeurope\n"
	write("rg.yaml", rg)
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	rec := reconcile.New(source.NewDir(dir, ""), db, env.Clients, cfg, quiet)
	srv := httptest.NewServer(api.New(db, api.Options{Ready: rec.Ready, Logger: quiet, UI: web.Handler()}))
	t.Cleanup(srv.Close)
	poll := func() error { // what the daemon runs for a new revision
		_, err := rec.Once(context.Background(), reconcile.Options{Trigger: "interval", Refresh: true})
		return err
	}
	if err := poll(); err != nil {
		t.Fatal(err)
	}
	applied, _ := db.LastGoodRevision()

	write("rg.yaml", strings.Replace(rg, "westeurope", "[westeurope", 1))
	if err := poll(); !errors.Is(err, reconcile.ErrRefused) {
		t.Fatalf("%v, want the revision refused", err)
	}
	rs, err := db.Runs(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 2 || rs[0].Outcome != record.OutcomeSucceeded || rs[1].Outcome != record.OutcomeRefused {
		t.Fatalf("newest runs %+v, want the refused run then the refresh of the last good revision", rs)
	}
	refused := rs[1].Revision // "dir-" and 12 hex digits: the page shows it whole
	dom := dumpDOM(t, srv.URL+"/#resources")
	banner := element(t, dom, "section", `id="refused"`)
	if strings.Contains(banner[:strings.Index(banner, ">")], "hidden") {
		t.Fatalf("refused banner hidden while revision %s is refused (the newest run refreshed %s):\n%s", refused, applied, banner)
	}
	b := text(banner)
	for _, want := range []string{"Revision " + refused + " is refused", "Revision " + applied + " stays applied", "rg.yaml:", "invalid YAML"} {
		if !strings.Contains(b, want) {
			t.Errorf("banner lacks %q:\n%s", want, b)
		}
	}
	if last := element(t, dom, "p", `id="refreshed"`); !strings.Contains(last, "succeeded") {
		t.Errorf("the page's last run is not the refresh that succeeded: %s", text(last))
	}

	write("rg.yaml", strings.Replace(rg, "location: westeurope", "location: westeurope\n  tags:\n    fixed: \"yes\"", 1))
	if err := poll(); err != nil {
		t.Fatalf("the fixing commit: %v", err)
	}
	if banner := element(t, dumpDOM(t, srv.URL+"/"), "section", `id="refused"`); !strings.Contains(banner[:strings.Index(banner, ">")], "hidden") {
		t.Errorf("the banner stays after a fixing commit: %s", text(banner))
	}
}
