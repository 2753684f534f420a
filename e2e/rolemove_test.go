package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
)

// accessGroup is the resource group the role assignments are made at; it
// stays in namespace platform.
const accessGroup = `
apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: access-rg
  namespace: platform
spec:
  location: westeurope
`

// exportedGrant is an identity exporting its principal ID and a role
// assignment without azureName reading it, in namespace __NS__.
const exportedGrant = `
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: app-identity
  namespace: __NS__
spec:
  location: westeurope
  owner:
    armId: /subscriptions/__SUB__/resourceGroups/access-rg
  operatorSpec:
    configMaps:
      principalId:
        name: app-identity-settings
        key: principalId
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: app-reader
  namespace: __NS__
spec:
  owner:
    armId: /subscriptions/__SUB__/resourceGroups/access-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalIdFromConfig:
    name: app-identity-settings
    key: principalId
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: Reader
`

// literalGrant is a role assignment without azureName granting Reader to a
// principal given by its ID, in namespace __NS__.
const literalGrant = `
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: reader-%02d
  namespace: __NS__
spec:
  owner:
    armId: /subscriptions/__SUB__/resourceGroups/access-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalId: %s
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: Reader
`

// A RoleAssignment moved to another namespace without azureName keeps its
// ARM name (ASO's default would give it another, which Azure refuses while
// the old one exists): watched every 50 ms, the principal never lacks the
// role at the scope; the plan says the move keeps the name and why; the
// next run changes nothing.
func TestRoleAssignmentMoveNeverLosesAccess(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	for _, tc := range []struct {
		name     string
		literals int
		exported bool
	}{
		{"one, principal from an export", 0, true},
		{"twenty, literal principals", 20, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var principals []string
			for i := range tc.literals {
				sp, err := e.emu.AddServicePrincipal(fmt.Sprintf("reader-%02d", i))
				if err != nil {
					t.Fatal(err)
				}
				principals = append(principals, sp.ObjectID)
			}
			manifests := func(ns string) string {
				var b strings.Builder
				if tc.exported {
					b.WriteString(exportedGrant)
				}
				for i, p := range principals {
					if b.Len() > 0 {
						b.WriteString("---")
					}
					fmt.Fprintf(&b, literalGrant, i, p)
				}
				return strings.ReplaceAll(b.String(), "__NS__", ns)
			}
			e.commit("create", map[string]string{"platform/rg.yaml": accessGroup, "team-a/access.yaml": manifests("team-a")})
			e.runSucceeds(t, "create")
			scope := e.rgID("access-rg")
			before := e.grants(t, scope)
			if want := tc.literals + map[bool]int{true: 1}[tc.exported]; len(before) != want {
				t.Fatalf("%d grants at the group after the create, want %d: %v", len(before), want, before)
			}

			stop := e.watchGrants(t, scope, before)
			rev := e.commit("move to team-b", map[string]string{"team-a/access.yaml": "", "team-b/access.yaml": manifests("team-b")})
			rep := e.run(true)
			missing, samples := stop()
			if len(missing) > 0 {
				t.Errorf("during the move, %d of %d samples (every 50 ms) lacked grants, first: %s", len(missing), samples, missing[0])
			}
			if rep.Run.Outcome != record.OutcomeSucceeded {
				t.Fatalf("move run %s: %s", rep.Run.Outcome, rep.Run.Error)
			}
			// The plan: moves keeping the old names, no create, no delete.
			for _, r := range rep.Plan.Resources {
				if r.Kind != "RoleAssignment" {
					continue
				}
				if r.Action != planner.Move || !strings.Contains(r.Reason, "keeps its name") {
					t.Errorf("%s at %s: %s %q, want a move keeping its name", r.ID(), rev[:7], r.Action, r.Reason)
				}
				if r.Namespace == "team-b" {
					old := e.resource("team-b", r.Group, r.Kind, r.Name)
					if !strings.Contains(r.Reason, old.ARMID[strings.LastIndexByte(old.ARMID, '/')+1:]) {
						t.Errorf("%s: reason %q does not name the kept name of %s", r.ID(), r.Reason, old.ARMID)
					}
				}
			}
			after := e.grants(t, scope)
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Errorf("grants after the move %v, want the same assignments %v", after, before)
			}
			// The next run keeps the names: nothing written.
			e.emu.ResetStats()
			rep = e.runSucceeds(t, "after the move")
			if rep.Plan.HasChanges() {
				t.Errorf("the run after the move planned changes:\n%s", planText(t, rep.Plan))
			}
			if w := e.writes(); len(w) != 0 {
				t.Errorf("the run after the move wrote %v", w)
			}
		})
	}
}

// grants returns the role assignments at scope itself, "principal|role" →
// assignment ID.
func (e *env) grants(t *testing.T, scope string) map[string]string {
	t.Helper()
	out, err := readGrants(e, scope)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func readGrants(e *env, scope string) (map[string]string, error) {
	items, err := e.cli.List(context.Background(), scope+"/providers/Microsoft.Authorization/roleAssignments", authzAPIVersion)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, it := range items {
		var v struct {
			ID         string `json:"id"`
			Properties struct {
				Scope, PrincipalID, RoleDefinitionID string
			} `json:"properties"`
		}
		if err := json.Unmarshal(it, &v); err != nil {
			return nil, err
		}
		if !strings.EqualFold(v.Properties.Scope, scope) {
			continue // the subscription's, above the group
		}
		role := v.Properties.RoleDefinitionID
		out[strings.ToLower(v.Properties.PrincipalID+"|"+role[strings.LastIndexByte(role, '/')+1:])] = strings.ToLower(v.ID)
	}
	return out, nil
}

// watchGrants reads the grants at scope every 50 ms until the returned
// function is called; it returns the samples that lacked one of want, and
// how many samples were taken.
func (e *env) watchGrants(t *testing.T, scope string, want map[string]string) func() ([]string, int) {
	t.Helper()
	done := make(chan struct{})
	var (
		mu      sync.Mutex
		missing []string
		samples int
		wg      sync.WaitGroup
	)
	sample := func() {
		got, err := readGrants(e, scope)
		mu.Lock()
		defer mu.Unlock()
		samples++
		if err != nil {
			missing = append(missing, "read failed: "+err.Error())
			return
		}
		var lacks []string
		for g := range want {
			if _, ok := got[g]; !ok {
				lacks = append(lacks, g)
			}
		}
		if len(lacks) > 0 {
			missing = append(missing, fmt.Sprintf("%d absent at %s (%s ...)", len(lacks), time.Now().Format("15:04:05.000"), lacks[0]))
		}
	}
	wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	return func() ([]string, int) {
		close(done)
		wg.Wait()
		sample() // and once after the run
		mu.Lock()
		defer mu.Unlock()
		return missing, samples
	}
}
