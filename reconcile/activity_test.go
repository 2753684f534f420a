package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/harness/benchdata"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/syncbuf"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// resync runs one periodic resync (what the loop's timer runs).
func resync(t *testing.T, e *resyncEnv) *reconcile.Report {
	t.Helper()
	e.emu.ResetStats()
	rep, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// activityQueries counts the Activity Log queries ARM saw.
func activityQueries(emu *emulator.Emulator) int {
	n := 0
	for _, l := range emu.RequestLog() {
		if strings.Contains(strings.ToLower(l.Path), "/providers/microsoft.insights/eventtypes/management/values") {
			n++
		}
	}
	return n
}

func armIDOf(t *testing.T, e *resyncEnv, kind, name string) string {
	t.Helper()
	rs, err := e.db.Resources(record.Filter{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if r.Name == name || name == "" {
			return r.ARMID
		}
	}
	t.Fatalf("no %s %q in state", kind, name)
	return ""
}

// TestResyncFromActivityLog: an idle periodic resync sends the Activity Log
// query and nothing else; drift injected out of band (a tracked resource, a
// proxy resource, a deletion, children deleted with their parent) is read
// and corrected within one period, and a full read afterwards finds Azure
// as the manifests say.
func TestResyncFromActivityLog(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	e := newResyncEnv(t, 100, everyRun(1000))
	resync(t, e)             // the first resync reads everything: nothing was read yet
	for i := 0; i < 2; i++ { // the second follows a period that read nothing
		rep := resync(t, e)
		if rep.Plan.HasChanges() {
			t.Fatalf("idle resync %d plans changes: %v", i, rep.Plan.Summary())
		}
		if req, wr := armRequests(e.emu); req > 2 || wr != 0 || activityQueries(e.emu) != 1 {
			t.Fatalf("idle resync %d of 100 resources: %d requests (%d Activity Log queries), %d writes; want ≤ 2, one log query, no writes", i, req, activityQueries(e.emu), wr)
		}
	}

	queues, err := e.db.Resources(record.Filter{Kind: "NamespacesQueue"})
	if err != nil || len(queues) < 4 {
		t.Fatalf("queues: %d %v", len(queues), err)
	}
	// A queue changed in the portal (proxy resource), another deleted.
	driftedQ, deletedQ := queues[0].ARMID, queues[1].ARMID
	if err := e.emu.SetResourceProperties(driftedQ, map[string]any{"maxDeliveryCount": 42}); err != nil {
		t.Fatal(err)
	}
	if err := e.emu.DeleteOutOfBand(deletedQ, "someone@example.com"); err != nil {
		t.Fatal(err)
	}
	// A namespace (tracked) rewritten with another SKU.
	nsID := armIDOf(t, e, "Namespace", "")
	var ns map[string]any
	body, err := e.cli.Get(context.Background(), nsID, "2021-11-01")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(body, &ns); err != nil {
		t.Fatal(err)
	}
	ns["sku"] = map[string]any{"name": "Basic", "tier": "Basic"}
	if err := e.emu.WriteOutOfBand(nsID, ns, "someone@example.com", ""); err != nil {
		t.Fatal(err)
	}
	// Another namespace deleted with its queues: the log names only the
	// namespace.
	var goneNS string
	for _, q := range queues {
		if parent := q.ARMID[:strings.LastIndex(q.ARMID, "/queues/")]; !strings.EqualFold(parent, nsID) &&
			!strings.HasPrefix(strings.ToLower(driftedQ), strings.ToLower(parent)+"/") && !strings.HasPrefix(strings.ToLower(deletedQ), strings.ToLower(parent)+"/") {
			goneNS = parent
			break
		}
	}
	if goneNS == "" {
		t.Fatal("no namespace left to delete")
	}
	var goneQueues int
	for _, q := range queues {
		if strings.HasPrefix(strings.ToLower(q.ARMID), strings.ToLower(goneNS)+"/") {
			goneQueues++
		}
	}
	if err := e.emu.DeleteOutOfBand(goneNS, "someone@example.com"); err != nil {
		t.Fatal(err)
	}

	rep := resync(t, e)
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("correcting run: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	sum := rep.Plan.Summary()
	if sum[planner.Drift] != 2 || sum[planner.Create] != 2+goneQueues {
		t.Errorf("plan after out-of-band changes: %v; want 2 drifts (queue, namespace) and %d creations (the deleted queue, namespace and its %d queues)",
			sum, 2+goneQueues, goneQueues)
	}
	// Corrected within that period: a full read finds nothing to do.
	e.emu.ResetStats()
	full, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true, All: true})
	if err != nil || full.Plan.HasChanges() {
		t.Fatalf("full read after the correcting run: %v %v", err, full.Plan.Summary())
	}
	// gitaso's own corrections are not read back by the next period.
	if rep := resync(t, e); rep.Plan.HasChanges() {
		t.Errorf("idle resync after corrections plans %v", rep.Plan.Summary())
	}
	if req, _ := armRequests(e.emu); req > 2 {
		t.Errorf("idle resync after corrections: %d requests, want ≤ 2", req)
	}
	// A write by gitaso's own principal that gitaso did not make is read.
	drift(t, e, 1)
	if rep := resync(t, e); rep.Plan.Summary()[planner.Drift] != 1 {
		t.Errorf("a write by gitaso's principal outside gitaso: plan %v, want 1 drift", rep.Plan.Summary())
	}
}

// TestResyncFullEveryN: with a full read every 3 periods, two periods ask
// only the log and the third reads every resource.
func TestResyncFullEveryN(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	e := newResyncEnv(t, 100, everyRun(3))
	type period struct{ requests, logQueries int }
	var got []period
	for i := 0; i < 6; i++ {
		if rep := resync(t, e); rep.Plan.HasChanges() {
			t.Fatalf("idle resync %d plans %v", i, rep.Plan.Summary())
		}
		req, _ := armRequests(e.emu)
		got = append(got, period{req, activityQueries(e.emu)})
	}
	for i, p := range got {
		// The first resync reads everything (nothing was read yet), then
		// every third.
		full := i%3 == 0
		if full && (p.requests <= 2 || p.logQueries != 0) || !full && (p.requests > 2 || p.logQueries != 1) {
			t.Errorf("resync periods (requests, Activity Log queries) %v: want a full read (no log query) every third period, else ≤ 2 requests", got)
			break
		}
	}
}

// syncBuffer is a log sink safe for concurrent writers and a reader.
type syncBuffer = syncbuf.Buffer

// TestResyncWithoutActivityLogPermission: a principal that may write the
// resources but not read the Activity Log (a custom role without
// Microsoft.Insights/eventtypes/*) gets today's full reads, and a warning
// logged once.
func TestResyncWithoutActivityLogPermission(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t, emutest.Emulator(emulator.WithoutThrottling()),
		emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
	role := "/subscriptions/" + env.Sub + "/providers/Microsoft.Authorization/roleDefinitions/6d3e2f1a-5b4c-4d7e-8f9a-0b1c2d3e4f5b"
	body, _ := json.Marshal(map[string]any{"properties": map[string]any{"roleName": "gitaso without activity log",
		"assignableScopes": []string{"/subscriptions/" + env.Sub},
		"permissions":      []any{map[string]any{"actions": []string{"*"}, "notActions": []string{"Microsoft.Insights/eventtypes/*"}}}}})
	if _, err := env.Client.Put(context.Background(), role, "2022-04-01", body); err != nil {
		t.Fatal(err)
	}
	_, cred := env.AddPrincipal(t, "nolog", "gitaso without activity log")
	logs := &syncBuffer{}
	e := newResyncEnvOn(t, env, cred, slog.New(slog.NewTextHandler(logs, nil)),
		func(dir string) error { return benchdata.GenerateApplyTree(dir, 100) }, everyRun(1000))
	resync(t, e) // the first resync reads everything: nothing was read yet
	drift(t, e, 2)
	rep := resync(t, e)
	if got := rep.Plan.Summary()[planner.Drift]; got != 2 {
		t.Errorf("resync without the log: %d drifts, want 2", got)
	}
	if req, _ := armRequests(e.emu); req <= 2 {
		t.Errorf("resync without the log sent %d requests: not a full read", req)
	}
	resync(t, e)
	if req, _ := armRequests(e.emu); req <= 2 {
		t.Errorf("second resync without the log sent %d requests: not a full read", req)
	}
	if n := strings.Count(logs.String(), "the Activity Log cannot be read"); n != 1 {
		t.Errorf("warning logged %d times, want once:\n%s", n, logs.String())
	}
}

// TestResyncChildChangedThroughParent: a VNet PUT outside gitaso that does
// not carry the subnets deletes them (as ARM does); the Activity Log names
// only the VNet, and the resync reads the subnet below it and recreates it
// within the period.
func TestResyncChildChangedThroughParent(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	gen := func(dir string) error {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, "net.yaml"), []byte(`apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata: {name: rg-net, namespace: team}
spec: {location: westeurope}
---
apiVersion: network.azure.com/v1api20240301
kind: VirtualNetwork
metadata: {name: vnet, namespace: team}
spec:
  location: westeurope
  owner: {name: rg-net}
  addressSpace:
    addressPrefixes: [10.0.0.0/16]
---
apiVersion: network.azure.com/v1api20240301
kind: VirtualNetworksSubnet
metadata: {name: apps, namespace: team}
spec:
  owner: {name: vnet}
  addressPrefix: 10.0.1.0/24
`), 0o644)
	}
	e := newResyncEnvWith(t, gen, everyRun(1000))
	resync(t, e) // the first resync reads everything
	vnetID := armIDOf(t, e, "VirtualNetwork", "vnet")
	body, err := e.cli.Get(context.Background(), vnetID, "2024-03-01")
	if err != nil {
		t.Fatal(err)
	}
	var vnet map[string]any
	if err := json.Unmarshal(body, &vnet); err != nil {
		t.Fatal(err)
	}
	props, _ := vnet["properties"].(map[string]any)
	if subnets, _ := props["subnets"].([]any); len(subnets) != 1 {
		t.Fatalf("vnet subnets %v", props["subnets"])
	}
	delete(props, "subnets")
	if err := e.emu.WriteOutOfBand(vnetID, vnet, "someone@example.com", "2024-03-01"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cli.Get(context.Background(), armIDOf(t, e, "VirtualNetworksSubnet", "apps"), "2024-03-01"); !errors.Is(err, azure.ErrNotFound) {
		t.Fatalf("the subnet outlived a VNet PUT without it: %v", err)
	}
	rep := resync(t, e)
	if got := rep.Plan.Get(planner.Key("team", "network.azure.com", "VirtualNetworksSubnet", "apps")); got == nil || got.Action != planner.Create {
		t.Fatalf("subnet deleted through its VNet: plan %v", rep.Plan.Summary())
	}
	full, err := e.rec.Once(context.Background(), reconcile.Options{Trigger: "refresh", Refresh: true, All: true})
	if err != nil || full.Plan.HasChanges() {
		t.Fatalf("full read after the correcting run: %v %v", err, full.Plan.Summary())
	}
}
