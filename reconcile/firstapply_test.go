package reconcile_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// A first apply into an empty subscription reads nothing one by one: one
// LIST of the subscription's resource groups shows that none of the ten
// exists, and so neither does any of the thirty identities in them. Groups
// that do exist (made out of band) are read from that list and what lies in
// them is read as before: an identity there is adopted, not created blind.
func TestFirstApplyReadsNoChildOfAMissingGroup(t *testing.T) {
	for _, existing := range []int{0, 2} {
		t.Run(fmt.Sprintf("%d groups exist", existing), func(t *testing.T) {
			env := emutest.New(t, emutest.Emulator(emulator.WithoutThrottling()),
				emutest.ClientOptions(func(o *azure.Options) { o.Limits.Disabled = true }))
			dir := t.TempDir()
			repo := filepath.Join(dir, "repo")
			if err := generateTracked(40)(repo); err != nil {
				t.Fatal(err)
			}
			rg := func(i int) string { return fmt.Sprintf("/subscriptions/%s/resourceGroups/rg-%02d", env.Sub, i) }
			for i := range existing {
				if err := env.Emu.WriteOutOfBand(rg(i), map[string]any{"location": "westeurope"}, "someone", "2021-04-01"); err != nil {
					t.Fatal(err)
				}
			}
			if existing > 0 { // id-0000 is in rg-00
				if err := env.Emu.WriteOutOfBand(rg(0)+"/providers/Microsoft.ManagedIdentity/userAssignedIdentities/id-0000",
					map[string]any{"location": "westeurope", "tags": map[string]any{"team": "t0"}}, "someone", "2023-01-31"); err != nil {
					t.Fatal(err)
				}
			}
			db, err := state.Open(filepath.Join(dir, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = db.Close() })
			cfg := reconcile.DefaultConfig()
			cfg.Global = env.Cred
			rec := reconcile.New(source.NewDir(repo, ""), db, env.Clients, cfg, nil)
			env.Emu.ResetStats()
			rep, err := rec.Once(context.Background(), reconcile.Options{Trigger: "startup", Refresh: true, All: true})
			if err != nil || rep.Run.Outcome != record.OutcomeSucceeded {
				t.Fatalf("first apply: %v %s %s", err, rep.Run.Outcome, rep.Run.Error)
			}
			// Reads of what lies in a group that does not exist, and of such groups one by one.
			var groupLists int
			var wasted []string
			inMissingGroup := func(p string) bool {
				for i := existing; i < 10; i++ {
					if strings.Contains(p, fmt.Sprintf("/resourcegroups/rg-%02d", i)) {
						return true
					}
				}
				return false
			}
			for _, l := range env.Emu.RequestLog() {
				if l.Method != "GET" || strings.Contains(l.Path, "operation") {
					continue
				}
				p := strings.ToLower(l.Path)
				switch {
				case strings.HasSuffix(p, "/resourcegroups"):
					groupLists++
				case inMissingGroup(p):
					wasted = append(wasted, l.Path)
				}
			}
			if groupLists != 1 || len(wasted) != 0 {
				t.Errorf("first apply of 30 identities in 10 groups, %d of them existing: %d lists of groups, and %d reads in groups that do not exist (%q); want 1 and none",
					existing, groupLists, len(wasted), wasted[:min(3, len(wasted))])
			}
			actions := map[string]string{}
			for _, r := range rep.Plan.Resources {
				actions[r.Name] = r.Action.String()
			}
			for i := range 10 {
				want := "create"
				if i < existing {
					want = "adopt"
				}
				if got := actions[fmt.Sprintf("rg-%02d", i)]; got != want {
					t.Errorf("rg-%02d: %s, want %s", i, got, want)
				}
			}
			if existing > 0 && actions["id-0000"] != "adopt" {
				t.Errorf("id-0000, made out of band in rg-00: %s, want adopt", actions["id-0000"])
			}
			if actions["id-0002"] != "create" {
				t.Errorf("id-0002 in rg-02: %s, want create", actions["id-0002"])
			}
		})
	}
}
