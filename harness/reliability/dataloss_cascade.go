package reliability

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/azure"
)

// Two of issue 24's data-loss cases (items 3 and 4 of its reliability probe):
//
//   - group-extensions: a resource group gitaso deletes holds role assignments and a lock nobody declared, at its
//     scope and on a resource in it. ARM's /resources list shows neither, so gitaso used to delete the group (and
//     the access those assignments granted) without a word. Want: the run held, naming them; approved (the lock
//     removed, as ARM requires), the group goes.
//   - role-move: role assignments without azureName move to another namespace (one fed by an identity's exported
//     principalId, twenty with literal principals). ASO's default name changes with the namespace, Azure refuses a
//     second assignment of a role to a principal at a scope, and gitaso used to delete the old ones before the new
//     ones could be created: the principals lost their access for seconds. Want: every grant present in every
//     sample taken every 50 ms during the move.

const (
	apiAuthzRA   = "2022-04-01"
	apiAuthzLock = "2016-09-01"
	readerRoleID = "acdd72a7-3385-48ef-bd42-f606fba81ae7"
)

func init() {
	registerDataLoss(DataLossSpec{
		Name: "group-extensions",
		What: "a deleted resource group holds unmanaged role assignments and a lock (at the group and on a resource)",
		Want: "held naming them; approved, the group goes",
		Run:  runGroupExtensions,
	})
	registerDataLoss(DataLossSpec{
		Name: "role-move",
		What: "21 role assignments without azureName move to another namespace",
		Want: "no grant absent in any 50 ms sample",
		Run:  runRoleMove,
	})
}

const dlGroupManifests = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: dl-ext-data
  namespace: dataloss
spec:
  location: westeurope
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: dl-ext-app
  namespace: dataloss
spec:
  location: westeurope
  owner:
    name: dl-ext-data
`

const dlKeepGroup = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: dl-ext-keep
  namespace: dataloss
spec:
  location: westeurope
`

func runGroupExtensions(ctx context.Context, env *Env, dir string) DataLossCase {
	fail := func(err error) DataLossCase { return DataLossCase{Err: err} }
	repo, err := NewRepo(dir)
	if err != nil {
		return fail(err)
	}
	apply := func(msg string, files map[string]string, extra ...string) (Proc, error) {
		if files != nil {
			if _, err := repo.Commit(files, msg); err != nil {
				return Proc{}, err
			}
		}
		return env.gitasoApply(ctx, repo.URL(), dir, KillPoint{}, 2*time.Minute, extra...)
	}
	p, err := apply("create", map[string]string{RepoPath + "/data.yaml": dlGroupManifests, RepoPath + "/keep.yaml": dlKeepGroup})
	if err != nil {
		return fail(err)
	}
	if p.Exit != 0 {
		return fail(fmt.Errorf("create: exit %d: %s", p.Exit, tailLines(p.Output, 3)))
	}
	rg := "/subscriptions/" + env.Sub + "/resourceGroups/dl-ext-data"
	identity := rg + "/providers/Microsoft.ManagedIdentity/userAssignedIdentities/dl-ext-app"
	sp, err := env.Emu.AddServicePrincipal("dl-ext-auditor")
	if err != nil {
		return fail(err)
	}
	grant := fmt.Sprintf(`{"properties":{"roleDefinitionId":"/subscriptions/%s/providers/Microsoft.Authorization/roleDefinitions/%s","principalId":"%s","principalType":"ServicePrincipal"}}`,
		env.Sub, readerRoleID, sp.ObjectID)
	unmanaged := []struct{ id, api, body string }{
		{rg + "/providers/Microsoft.Authorization/roleAssignments/3d0c9a52-7a1e-4b61-9a0f-2a5c7e3b1d01", apiAuthzRA, grant},
		{identity + "/providers/Microsoft.Authorization/roleAssignments/3d0c9a52-7a1e-4b61-9a0f-2a5c7e3b1d02", apiAuthzRA, grant},
		{rg + "/providers/Microsoft.Authorization/locks/dl-ext-keep", apiAuthzLock, `{"properties":{"level":"CanNotDelete"}}`},
	}
	put := func(us ...struct{ id, api, body string }) error {
		for _, u := range us {
			if _, err := env.Client.Put(ctx, u.id, u.api, []byte(u.body)); err != nil {
				return err
			}
		}
		return nil
	}
	// check reports how many of us the output names and how many of them (and the group) still exist.
	check := func(p Proc, us ...struct{ id, api, body string }) (named, intact int, err error) {
		for _, u := range us {
			if strings.Contains(strings.ToLower(p.Output), strings.ToLower(u.id)) {
				named++
			}
		}
		for _, u := range append(us[:len(us):len(us)], struct{ id, api, body string }{rg, "2021-04-01", ""}) {
			if _, err := env.Client.Get(ctx, u.id, u.api); err == nil {
				intact++
			} else if !errors.Is(err, azure.ErrNotFound) {
				return 0, 0, err
			}
		}
		return named, intact, nil
	}
	// The role assignments first: nothing refuses the group's deletion.
	if err := put(unmanaged[:2]...); err != nil {
		return fail(err)
	}
	p, err = apply("drop dl-ext-data", map[string]string{RepoPath + "/keep.yaml": dlKeepGroup})
	if err != nil {
		return fail(err)
	}
	named, intact, err := check(p, unmanaged[:2]...)
	if err != nil {
		return fail(err)
	}
	c := DataLossCase{Outcome: fmt.Sprintf("exit %d, named %d of 2 role assignments, %d of 3 intact", p.Exit, named, intact)}
	if !p.Held() || intact != 3 {
		return c
	}
	// Then a lock too: named with them.
	if err := put(unmanaged[2]); err != nil {
		return fail(err)
	}
	if p, err = apply("", nil); err != nil {
		return fail(err)
	}
	if named, intact, err = check(p, unmanaged...); err != nil {
		return fail(err)
	}
	c.Outcome = fmt.Sprintf("exit %d, named %d of %d, %d of %d intact", p.Exit, named, len(unmanaged), intact, len(unmanaged)+1)
	if !p.Held() || intact != len(unmanaged)+1 {
		return c
	}
	// The approval path: the lock removed (ARM refuses the deletion under it), then approved.
	if err := env.Client.Delete(ctx, unmanaged[2].id, apiAuthzLock); err != nil {
		return fail(err)
	}
	p, err = apply("", nil, "--approve-deletions")
	if err != nil {
		return fail(err)
	}
	_, gerr := env.Client.Get(ctx, rg, "2021-04-01")
	gone := errors.Is(gerr, azure.ErrNotFound)
	c.Outcome = fmt.Sprintf("held naming %d of %d; approved: exit %d, group deleted %v", named, len(unmanaged), p.Exit, gone)
	c.Held = named == len(unmanaged) && p.Exit == 0 && gone
	return c
}

const dlRoleGroup = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: dl-move-rg
  namespace: dataloss
spec:
  location: westeurope
`

const dlExportedGrant = `apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: dl-move-app
  namespace: __NS__
spec:
  location: westeurope
  owner:
    armId: /subscriptions/__SUB__/resourceGroups/dl-move-rg
  operatorSpec:
    configMaps:
      principalId:
        name: dl-move-app-settings
        key: principalId
---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: dl-move-app-reader
  namespace: __NS__
spec:
  owner:
    armId: /subscriptions/__SUB__/resourceGroups/dl-move-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalIdFromConfig:
    name: dl-move-app-settings
    key: principalId
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: Reader
`

const dlLiteralGrant = `---
apiVersion: authorization.azure.com/v1api20220401
kind: RoleAssignment
metadata:
  name: dl-move-reader-%02d
  namespace: __NS__
spec:
  owner:
    armId: /subscriptions/__SUB__/resourceGroups/dl-move-rg
    group: resources.azure.com
    kind: ResourceGroup
  principalId: %s
  principalType: ServicePrincipal
  roleDefinitionReference:
    wellKnownName: Reader
`

func runRoleMove(ctx context.Context, env *Env, dir string) DataLossCase {
	fail := func(err error) DataLossCase { return DataLossCase{Err: err} }
	repo, err := NewRepo(dir)
	if err != nil {
		return fail(err)
	}
	const literals = 20
	var principals []string
	for i := range literals {
		sp, err := env.Emu.AddServicePrincipal(fmt.Sprintf("dl-move-reader-%02d", i))
		if err != nil {
			return fail(err)
		}
		principals = append(principals, sp.ObjectID)
	}
	grants := func(ns string) string {
		var b strings.Builder
		b.WriteString(dlExportedGrant)
		for i, p := range principals {
			fmt.Fprintf(&b, dlLiteralGrant, i, p)
		}
		return strings.NewReplacer("__NS__", ns, "__SUB__", env.Sub).Replace(b.String())
	}
	apply := func(msg string, files map[string]string) (Proc, error) {
		if _, err := repo.Commit(files, msg); err != nil {
			return Proc{}, err
		}
		return env.gitasoApply(ctx, repo.URL(), dir, KillPoint{}, 2*time.Minute)
	}
	p, err := apply("create", map[string]string{RepoPath + "/rg.yaml": dlRoleGroup, RepoPath + "/team-a/access.yaml": grants("dl-team-a")})
	if err != nil {
		return fail(err)
	}
	if p.Exit != 0 {
		return fail(fmt.Errorf("create: exit %d: %s", p.Exit, tailLines(p.Output, 3)))
	}
	scope := "/subscriptions/" + env.Sub + "/resourceGroups/dl-move-rg"
	want, err := grantsAt(ctx, env.Client, scope)
	if err != nil {
		return fail(err)
	}
	if len(want) != literals+1 {
		return fail(fmt.Errorf("%d grants at %s after the create, want %d", len(want), scope, literals+1))
	}
	w := watchGrants(ctx, env.Client, scope, want)
	// Approved as a user would approve it: without the name kept, the move deletes 21 of 23 resources, which the
	// mass-deletion guard holds.
	if _, err := repo.Commit(map[string]string{RepoPath + "/rg.yaml": dlRoleGroup, RepoPath + "/team-b/access.yaml": grants("dl-team-b")}, "move to team-b"); err != nil {
		return fail(err)
	}
	p, err = env.gitasoApply(ctx, repo.URL(), dir, KillPoint{}, 2*time.Minute, "--approve-deletions")
	samples, lacking, worst := w()
	if err != nil {
		return fail(err)
	}
	c := DataLossCase{
		Outcome: fmt.Sprintf("exit %d; %d of %d samples lacked a grant (at most %d of %d absent)", p.Exit, lacking, samples, worst, len(want)),
		Detail:  fmt.Sprintf("%d samples every 50 ms", samples),
	}
	c.Held = p.Exit == 0 && lacking == 0
	return c
}

// grantsAt returns the role assignments made at scope itself, "principal|role GUID" → ID.
func grantsAt(ctx context.Context, cli *azure.Client, scope string) (map[string]string, error) {
	items, err := cli.List(ctx, scope+"/providers/Microsoft.Authorization/roleAssignments", apiAuthzRA)
	if err != nil {
		return nil, fmt.Errorf("reliability: list role assignments at %s: %w", scope, err)
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
			return nil, fmt.Errorf("reliability: role assignment at %s: %w", scope, err)
		}
		if !strings.EqualFold(v.Properties.Scope, scope) {
			continue // above the scope (the subscription's)
		}
		role := v.Properties.RoleDefinitionID
		out[strings.ToLower(v.Properties.PrincipalID+"|"+role[strings.LastIndexByte(role, '/')+1:])] = v.ID
	}
	return out, nil
}

// watchGrants samples the grants at scope every 50 ms until the returned function is called, which returns the
// samples taken, how many lacked one of want (or could not be read), and the most absent in one sample.
func watchGrants(ctx context.Context, cli *azure.Client, scope string, want map[string]string) func() (samples, lacking, worst int) {
	done := make(chan struct{})
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	var samples, lacking, worst int
	sample := func() {
		got, err := grantsAt(ctx, cli, scope)
		absent := 0
		for g := range want {
			if _, ok := got[g]; !ok || err != nil {
				absent++
			}
		}
		mu.Lock()
		defer mu.Unlock()
		samples++
		if absent > 0 {
			lacking++
			worst = max(worst, absent)
		}
	}
	wg.Go(func() {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	})
	return func() (int, int, int) {
		close(done)
		wg.Wait()
		sample()
		mu.Lock()
		defer mu.Unlock()
		return samples, lacking, worst
	}
}

// tailLines returns the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
