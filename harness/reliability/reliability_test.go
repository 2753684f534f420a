package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// Built-in role GUIDs the fleet's role assignments name by wellKnownName.
var roleGUIDs = map[string]string{
	"Contributor":                  "b24988ac-6180-42a0-ab88-20f7382dd24c",
	"Reader":                       "acdd72a7-3385-48ef-bd42-f606fba81ae7",
	"Azure Service Bus Data Owner": "090c5cfd-751d-490a-894a-3ce6f1109419",
}

// applyFleet does what gitaso would: it creates the fleet's resources in the emulator and records them Ready in a
// state file.
func applyFleet(t *testing.T, env *Env, f Fleet, statePath string) {
	t.Helper()
	ctx := context.Background()
	decls := map[string]Decl{}
	for _, d := range f.Decls() {
		decls[d.Name] = d
	}
	principals := map[string]string{} // settings config map → principalId
	for _, m := range f.members() {
		d := decls[f.name(m.key)]
		body := map[string]any{}
		for k, v := range m.spec {
			switch k {
			case "operatorSpec", "principalIdFromConfig", "principalType", "roleDefinitionReference":
			case "location", "tags", "sku":
				body[k] = v
			default:
				props, _ := body["properties"].(map[string]any)
				if props == nil {
					props = map[string]any{}
					body["properties"] = props
				}
				props[k] = v
			}
		}
		if m.kind == kindRoleAssign {
			from := m.spec["principalIdFromConfig"].(map[string]any)["name"].(string)
			role := m.spec["roleDefinitionReference"].(map[string]any)["wellKnownName"].(string)
			body["properties"] = map[string]any{"principalId": principals[from], "principalType": "ServicePrincipal",
				"roleDefinitionId": "/subscriptions/" + env.Sub + "/providers/Microsoft.Authorization/roleDefinitions/" + roleGUIDs[role]}
		}
		b, _ := json.Marshal(body)
		out, err := env.Client.Put(ctx, d.ARMID, d.APIVersion, b)
		if err != nil {
			t.Fatalf("PUT %s: %v", d.ARMID, err)
		}
		if m.kind == kindIdentity {
			var got map[string]any
			_ = json.Unmarshal(out, &got)
			principals[f.Prefix+"-"+m.key+"-settings"] = str(got, "properties", "principalId")
		}
	}
	writeState(t, statePath, f.Decls())
}

func writeState(t *testing.T, path string, decls []Decl) {
	t.Helper()
	db, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(w *state.Writer) error {
		for _, d := range decls {
			r := record.Resource{Namespace: d.Namespace, Group: d.Group, Version: d.Version, Kind: d.Kind, Name: d.Name,
				ARMID: d.ARMID, APIVersion: d.APIVersion, Ready: record.Condition{Type: "Ready", Status: record.StatusTrue}}
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

func newTestEnv(t *testing.T) *Env {
	t.Helper()
	env, err := NewEnv(EnvOptions{Dir: t.TempDir(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Close() })
	return env
}

func short(ids []string) []string {
	var out []string
	for _, id := range ids {
		out = append(out, id[strings.LastIndex(id, "/")+1:])
	}
	return out
}

// TestChecksDetectLossOrphanDuplicate applies a fleet as gitaso would and then breaks it behind the harness's
// back: each kind of damage must show in the verdict.
func TestChecksDetectLossOrphanDuplicate(t *testing.T) {
	env := newTestEnv(t)
	ctx := context.Background()
	f := NewFleet("rel-u1", env.Sub)
	statePath := filepath.Join(env.Dir, "gitaso.db")
	applyFleet(t, env, f, statePath)
	exp := Expectation{Declared: f.Decls()}
	v, err := Check(ctx, env, f.Prefix, statePath, exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !v.Converged() || len(v.Lost) > 0 {
		t.Fatalf("fresh fleet: %s", v.Findings())
	}
	inv, err := Inventory(ctx, env.Client, env.Sub, f.Prefix)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) != 11 {
		t.Errorf("inventory holds %d resources, want the fleet's 11", len(inv))
	}
	exp.Baseline = Baseline(inv)
	var q1, q2 Decl
	for _, d := range exp.Declared {
		switch d.Name {
		case "rel-u1-q1":
			q1 = d
		case "rel-u1-q2":
			q2 = d
		}
	}

	// Deleted behind gitaso's back: lost (and missing).
	env.Emu.ResetStats()
	if err := env.Client.Delete(ctx, q2.ARMID, q2.APIVersion); err != nil {
		t.Fatal(err)
	}
	v, err = Check(ctx, env, f.Prefix, statePath, exp, env.Emu.RequestLog())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rel-u1-q2"}, short(v.Lost)); diff != "" {
		t.Errorf("lost (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"rel-u1-q2"}, short(v.Missing)); diff != "" {
		t.Errorf("missing (-want +got):\n%s", diff)
	}

	// Deleted and created again: still lost, seen from the fingerprint alone (no request log).
	if _, err := env.Client.Put(ctx, q2.ARMID, q2.APIVersion, []byte(`{"properties":{"lockDuration":"PT1M","maxDeliveryCount":10}}`)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := env.Client.Delete(ctx, q1.ARMID, q1.APIVersion); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Client.Put(ctx, q1.ARMID, q1.APIVersion, []byte(`{"properties":{"lockDuration":"PT1M","maxDeliveryCount":10}}`)); err != nil {
		t.Fatal(err)
	}
	v, err = Check(ctx, env, f.Prefix, statePath, exp, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rel-u1-q1", "rel-u1-q2"}, short(v.Lost)); diff != "" {
		t.Errorf("re-created (-want +got):\n%s", diff)
	}
	if len(v.Missing) > 0 || !v.Converged() {
		t.Errorf("re-created resources are there again: %s", v.Findings())
	}

	// A resource Git does not declare, unknown to state: orphaned; known to state: undeleted.
	stray := "/subscriptions/" + env.Sub + "/resourceGroups/rel-u1-main/providers/Microsoft.ManagedIdentity/userAssignedIdentities/rel-u1-stray"
	if _, err := env.Client.Put(ctx, stray, "2023-01-31", []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	// An ARM resource named after the manifest's other name (a move that ignored spec.azureName): duplicated.
	dup := "/subscriptions/" + env.Sub + "/resourceGroups/rel-u1-aux-mv"
	if _, err := env.Client.Put(ctx, dup, apiResources, []byte(`{"location":"westeurope"}`)); err != nil {
		t.Fatal(err)
	}
	v, err = Check(ctx, env, f.Prefix, statePath, Expectation{Declared: exp.Declared}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rel-u1-aux-mv", "rel-u1-stray"}, short(v.Orphaned)); diff != "" {
		t.Errorf("orphaned (-want +got):\n%s", diff)
	}
	if len(v.Duplicated) != 1 || !strings.Contains(v.Duplicated[0], "rel-u1-aux-mv") {
		t.Errorf("duplicated = %q, want the aux resource group twice", v.Duplicated)
	}
	if v.Converged() {
		t.Error("converged with an orphan and a duplicate")
	}
	writeState(t, statePath, []Decl{{Namespace: "x", Group: "managedidentity.azure.com", Kind: "UserAssignedIdentity", Name: "stray", ARMID: stray}})
	v, err = Check(ctx, env, f.Prefix, statePath, Expectation{Declared: exp.Declared}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rel-u1-stray"}, short(v.Undeleted)); diff != "" {
		t.Errorf("undeleted (-want +got):\n%s", diff)
	}
}

// TestEvaluateDuplicateRoleAssignments: the emulator refuses a second assignment of one role to one principal at
// one scope (as ARM does), so the check is fed the inventory directly.
func TestEvaluateDuplicateRoleAssignments(t *testing.T) {
	ra := func(name string) AzureResource {
		return AzureResource{ID: "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Authorization/roleAssignments/" + name,
			Type: "Microsoft.Authorization/roleAssignments", Name: name, Body: map[string]any{"properties": map[string]any{
				"scope": "/subscriptions/s/resourceGroups/rg", "principalId": "p1",
				"roleDefinitionId": "/subscriptions/s/providers/Microsoft.Authorization/roleDefinitions/r1"}}}
	}
	v := Evaluate(Expectation{}, []AzureResource{ra("a"), ra("b")}, StateView{}, nil)
	if len(v.Duplicated) != 1 || !strings.Contains(v.Duplicated[0], "/a, ") {
		t.Errorf("duplicated = %q", v.Duplicated)
	}
}

// TestDeleteRequestsCountAsLoss: a DELETE ARM carried out on a declared resource's ancestor is a loss even when
// the resource is back by the time of the check; one on an undeclared sibling is not.
func TestDeleteRequestsCountAsLoss(t *testing.T) {
	f := NewFleet("rel-u2", "sub")
	decls := f.Decls()
	var inv []AzureResource
	for _, d := range decls {
		inv = append(inv, AzureResource{ID: d.ARMID, Type: d.ARMType, Name: d.AzureName})
	}
	base := Baseline(inv)
	rg := "/subscriptions/sub/resourceGroups/rel-u2-main"
	for _, tc := range []struct {
		name   string
		status int
		fault  string
		path   string
		lost   int
	}{
		{"resource group deleted", 202, "", rg, 8},
		{"delete refused", 409, "", rg, 0},
		{"served then reset", 0, "reset-after", rg, 8},
		{"reset before serving", 0, "reset", rg, 0},
		{"sibling", 200, "", rg + "/providers/Microsoft.ServiceBus/namespaces/rel-u2-bus/queues/rel-u2-q", 0},
		{"other group", 202, "", "/subscriptions/sub/resourceGroups/rel-u2-mainx", 0},
	} {
		log := []emulator.LogEntry{{Method: "DELETE", Path: tc.path, Status: tc.status, Fault: tc.fault}}
		v := Evaluate(Expectation{Declared: decls, Baseline: base}, inv, StateView{}, log)
		if len(v.Lost) != tc.lost {
			t.Errorf("%s: lost %d (%v), want %d", tc.name, len(v.Lost), short(v.Lost), tc.lost)
		}
	}
}

// TestCorruptedState: a file that is not a bbolt database, and a record that does not decode.
func TestCorruptedState(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadState(filepath.Join(dir, "missing.db")); err != nil {
		t.Errorf("missing state file: %v", err)
	}
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("not bbolt ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(garbage); !errors.Is(err, ErrCorrupted) {
		t.Errorf("garbage file: %v, want ErrCorrupted", err)
	}
	bad := filepath.Join(dir, "bad-record.db")
	writeState(t, bad, NewFleet("rel-u3", "sub").Decls()[:1])
	if _, err := ReadState(bad); err != nil {
		t.Fatalf("sound file: %v", err)
	}
	db, err := bolt.Open(bad, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("resources")).Put([]byte("ns/resources.azure.com/ResourceGroup/x"), []byte("{truncated"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(bad); !errors.Is(err, ErrCorrupted) || !strings.Contains(err.Error(), "ResourceGroup/x") {
		t.Errorf("undecodable record: %v, want ErrCorrupted naming it", err)
	}
	// A truncated file is reported, not a fault that kills the harness (bbolt's tx.Check read past its map).
	sound := filepath.Join(dir, "sound.db")
	writeState(t, sound, NewFleet("rel-u4", "sub").Decls())
	b, err := os.ReadFile(sound)
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.db")
	if err := os.WriteFile(truncated, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadState(truncated); !errors.Is(err, ErrCorrupted) {
		t.Errorf("truncated file: %v, want ErrCorrupted", err)
	}
}

// TestFleetVariants: the move keeps every ARM ID, the delete drops four resources.
func TestFleetVariants(t *testing.T) {
	f := NewFleet("rel-u4", "sub")
	ids := func(f Fleet) []string {
		var out []string
		for _, d := range f.Decls() {
			out = append(out, d.ARMID)
		}
		return out
	}
	if diff := cmp.Diff(ids(f), ids(f.MovedAway())); diff != "" {
		t.Errorf("moved fleet ARM IDs (-before +after):\n%s", diff)
	}
	if n, m := len(f.Decls()), len(f.Dropping().Decls()); n != 11 || m != 7 {
		t.Errorf("fleet %d resources, after the delete %d; want 11 and 7", n, m)
	}
	moved := f.MovedAway().Files()
	for p, content := range moved {
		if !strings.HasPrefix(p, RepoPath+"/moved/") || !strings.Contains(content, "namespace: u4-team-mv") || !strings.Contains(content, "azureName:") {
			t.Errorf("moved file %s:\n%s", p, content)
		}
	}
	if d := f.MovedAway().Decls()[0]; !strings.HasSuffix(d.Name, "-mv") || d.Namespace != "u4-team-mv" {
		t.Errorf("moved decl %+v", d)
	}
}

// TestProcessKillAndHostileOutcomes runs the harness's process handling on shell scripts standing in for gitaso.
func TestProcessKillAndHostileOutcomes(t *testing.T) {
	env := newTestEnv(t)
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env.Gitaso = script("sleeper", "sleep 30")
	r, err := env.gitasoApply(context.Background(), "file:///none", dir, KillPoint{After: 100 * time.Millisecond}, 10*time.Second)
	if err != nil || !r.Killed || r.Exit != -1 || r.Duration > 5*time.Second {
		t.Errorf("kill: %+v %v", r, err)
	}
	env.Gitaso = script("quick", "echo done; exit 3")
	r, err = env.gitasoApply(context.Background(), "file:///none", dir, KillPoint{After: 5 * time.Second}, 10*time.Second)
	if err != nil || r.Killed || !r.Held() || !strings.Contains(r.Output, "done") {
		t.Errorf("finished before the kill: %+v %v", r, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, launcher := range []string{"", self} {
		o := HostileOptions{Timeout: 300 * time.Millisecond, MemLimit: 1 << 30, Launcher: launcher}
		if launcher != "" {
			o.Timeout = 20 * time.Second // a race-instrumented test binary takes a second to start
		}
		for _, tc := range []struct{ body, outcome, line string }{
			{"echo 'a.yaml:1: bad'; exit 1", OutcomeRefused, "a.yaml:1: bad"},
			{"echo ok", OutcomeAccepted, "ok"},
			{"echo 'panic: boom' >&2; exit 2", OutcomeCrashed, "panic: boom"},
			{"sleep 30", OutcomeTimedOut, ""},
			{"kill -SEGV $$", OutcomeCrashed, "killed by segmentation fault"},
		} {
			if launcher != "" && tc.outcome == OutcomeTimedOut {
				continue
			}
			c, err := validate(context.Background(), script("v", tc.body), "", dir, o)
			if err != nil || c.Outcome != tc.outcome || c.Error != tc.line || c.MaxRSS <= 0 {
				t.Errorf("launcher %q, %q: %+v %v, want %s %q", launcher, tc.body, c, err, tc.outcome, tc.line)
			}
		}
	}
}

func TestMain(m *testing.M) {
	MaybeMeasure() // the test binary is the launcher of TestProcessKillAndHostileOutcomes
	os.Exit(m.Run())
}
