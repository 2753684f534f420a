package reconcile_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// deleteEnv is a resource group with identities, each with a federated
// credential, all applied and then removed from Git but the group.
type deleteEnv struct {
	env    *emutest.Env
	repo   string
	dbPath string
	cfg    reconcile.Config
	n      int
}

const listingGroup = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: rg-listings
  namespace: platform
spec:
  location: westeurope
`

func identitiesYAML(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: id-%02d
  namespace: platform
spec:
  location: westeurope
  owner:
    name: rg-listings
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: FederatedIdentityCredential
metadata:
  name: id-%02d-fic
  namespace: platform
spec:
  owner:
    name: id-%02d
  audiences: ["api://AzureADTokenExchange"]
  issuer: "https://oidc.example.com/cluster"
  subject: "system:serviceaccount:team:sa-%02d"
`, i, i, i, i)
	}
	return b.String()
}

func newDeleteEnv(t *testing.T, n int) *deleteEnv {
	t.Helper()
	e := &deleteEnv{env: emutest.New(t), n: n}
	dir := t.TempDir()
	e.repo, e.dbPath = filepath.Join(dir, "repo"), filepath.Join(dir, "state.db")
	if err := os.MkdirAll(e.repo, 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(t, listingGroup, identitiesYAML(n))
	e.cfg = reconcile.DefaultConfig()
	e.cfg.Global = e.env.Cred
	e.cfg.Guard = planner.Guard{} // the unmanaged-children check runs (an approval would skip it)
	e.cfg.ReadParallelism = 2
	db := e.open(t)
	defer db.Close()
	if _, err := reconcile.New(source.NewDir(e.repo, ""), db, e.env.Clients, e.cfg, nil).Once(context.Background(), reconcile.Options{Trigger: "startup"}); err != nil {
		t.Fatal(err)
	}
	e.write(t, listingGroup, "")
	return e
}

func (e *deleteEnv) write(t *testing.T, group, identities string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(e.repo, "group.yaml"), []byte(group), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.repo, "identities.yaml"), []byte(identities), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (e *deleteEnv) open(t *testing.T) *state.DB {
	t.Helper()
	db, err := state.Open(e.dbPath)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// interrupt runs the deletion and stops it, as a crash would, once at least
// a quarter of the child collections are recorded as listed and before any
// DELETE; it returns the listings the state file holds then.
func (e *deleteEnv) interrupt(t *testing.T) map[string]state.Listing {
	t.Helper()
	db := e.open(t)
	defer db.Close()
	// Every request takes 150 ms: two listings at a time, the check takes
	// about n×75 ms, several flushes of the listings (every 250 ms), which
	// leaves time to stop it half way.
	e.env.Emu.SetFaults(emulator.Faults{Latency: 150 * time.Millisecond})
	defer e.env.Emu.SetFaults(emulator.Faults{})
	e.env.Emu.ResetStats()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := reconcile.New(source.NewDir(e.repo, ""), db, e.env.Clients, e.cfg, nil).Once(ctx, reconcile.Options{Trigger: "startup"})
		errc <- err
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		ls, _, err := db.Listings(revisionOf(t, e.repo), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		fics := 0
		for _, l := range ls {
			if strings.HasSuffix(strings.ToLower(l.Path), "/federatedidentitycredentials") {
				fics++
			}
		}
		if fics >= e.n/4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d child listings recorded after 20 s, want %d", fics, e.n/4)
		}
	}
	cancel()
	// The stopped check cannot read the rest: the run ends held (nothing
	// deleted) or with the context's error.
	<-errc
	if n := e.env.Emu.Stats().ByMethod["DELETE"]; n != 0 {
		t.Fatalf("the stopped run sent %d DELETEs: it was stopped too late to test a restart of the check", n)
	}
	all, _, err := db.Listings(revisionOf(t, e.repo), time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	// The identities' credentials: the extension resources of the group
	// (role assignments, locks) are listed and recorded too.
	ls := map[string]state.Listing{}
	for k, l := range all {
		if strings.HasSuffix(strings.ToLower(l.Path), "/federatedidentitycredentials") {
			ls[k] = l
		}
	}
	if len(ls) >= e.n || len(ls) == 0 {
		t.Fatalf("%d of %d collections were recorded when the run stopped: the test proves nothing", len(ls), e.n)
	}
	return ls
}

// restart runs the deletion in a new process (new clients, the state file
// opened again) and returns its report and the child collections it listed.
func (e *deleteEnv) restart(t *testing.T) (*reconcile.Report, []string) {
	t.Helper()
	db := e.open(t)
	defer db.Close()
	e.env.Emu.ResetStats()
	copts := azure.DefaultOptions()
	copts.PollInterval = 10 * time.Millisecond
	rep, err := reconcile.New(source.NewDir(e.repo, ""), db, azure.NewClients(e.env.Cloud, copts), e.cfg, nil).Once(context.Background(), reconcile.Options{Trigger: "startup"})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range e.env.Emu.RequestLog() {
		if l.Method == "GET" && strings.HasSuffix(strings.ToLower(l.Path), "/federatedidentitycredentials") {
			listed = append(listed, strings.ToLower(l.Path))
		}
	}
	sort.Strings(listed)
	return rep, listed
}

func revisionOf(t *testing.T, dir string) string {
	t.Helper()
	snap, err := source.NewDir(dir, "").Fetch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return snap.Revision
}

func identityCount(e *deleteEnv) int {
	n := 0
	for _, r := range e.env.Emu.Resources() {
		if strings.EqualFold(r.Type, "Microsoft.ManagedIdentity/userAssignedIdentities") {
			n++
		}
	}
	return n
}

// TestDeleteResumesChildListings stops a deletion of 40 identities during
// its unmanaged-children check and checks that the next process lists only
// the collections the first one had not recorded, then deletes everything.
func TestDeleteResumesChildListings(t *testing.T) {
	e := newDeleteEnv(t, 40)
	recorded := e.interrupt(t)
	rep, listed := e.restart(t)
	if rep.Run.Outcome != record.OutcomeSucceeded {
		t.Fatalf("restarted run: %s %s", rep.Run.Outcome, rep.Run.Error)
	}
	for _, p := range listed {
		for _, l := range recorded {
			if strings.EqualFold(l.Path, p) {
				t.Errorf("the restarted run listed %s again: recorded at %s", p, l.ListedAt)
			}
		}
	}
	if want := e.n - len(recorded); len(listed) != want {
		t.Errorf("the restarted run listed %d collections, want the %d the first run had not recorded", len(listed), want)
	}
	if n := identityCount(e); n != 0 {
		t.Errorf("%d identities left in Azure, want none", n)
	}
	db := e.open(t)
	defer db.Close()
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Kind != "ResourceGroup" {
		t.Errorf("state holds %d resources, want the resource group only", len(rs))
	}
	if ls, stale, err := db.Listings(rep.Run.Revision, time.Time{}); err != nil || len(ls)+stale != 0 {
		t.Errorf("after the deletion succeeded the state file holds %d listings (%d stale, %v), want none", len(ls), stale, err)
	}
}

// TestRecordedListingsReadAgain: a recorded listing is not used for another
// revision, once older than the bound, or when it names a resource gitaso no
// longer manages (read again: the hold is decided on what ARM holds now).
func TestRecordedListingsReadAgain(t *testing.T) {
	for _, tc := range []string{"new revision", "too old", "names an unmanaged resource"} {
		t.Run(tc, func(t *testing.T) {
			e := newDeleteEnv(t, 12)
			recorded := e.interrupt(t)
			var first state.Listing
			for _, l := range recorded {
				if first.Path == "" || l.Path < first.Path {
					first = l
				}
			}
			ficID := first.IDs[0]
			wantListed := e.n
			switch tc {
			case "new revision":
				e.write(t, strings.Replace(listingGroup, "location: westeurope", "location: westeurope\n  tags:\n    rev: two", 1), "")
			case "too old":
				db := e.open(t)
				err := db.Update(func(w *state.Writer) error {
					for _, l := range recorded {
						l.ListedAt = l.ListedAt.Add(-11 * time.Minute)
						if err := w.PutListing(l); err != nil {
							return err
						}
					}
					return nil
				})
				db.Close()
				if err != nil {
					t.Fatal(err)
				}
			case "names an unmanaged resource":
				// gitaso forgets the credential (as a detach would): it is
				// in Azure, recorded in the listing, and no longer managed.
				db := e.open(t)
				err := db.Update(func(w *state.Writer) error {
					return w.DeleteResource(record.ResourceKey("platform", "managedidentity.azure.com", "FederatedIdentityCredential",
						strings.TrimPrefix(strings.ToLower(ficID[strings.LastIndexByte(ficID, '/'):]), "/")))
				})
				db.Close()
				if err != nil {
					t.Fatal(err)
				}
				wantListed = e.n - len(recorded) + 1
			}
			rep, listed := e.restart(t)
			if len(listed) != wantListed {
				t.Errorf("the restarted run listed %d collections, want %d", len(listed), wantListed)
			}
			if !containsFold(listed, first.Path) {
				t.Errorf("the restarted run did not list %s again", first.Path)
			}
			if tc == "names an unmanaged resource" {
				if rep.Run.Outcome != record.OutcomeHeld || rep.Run.Held == nil || !containsFold(rep.Run.Held.Unmanaged, ficID) {
					t.Errorf("restarted run: %s, held %+v; want held for %s", rep.Run.Outcome, rep.Run.Held, ficID)
				}
				return
			}
			if rep.Run.Outcome != record.OutcomeSucceeded || identityCount(e) != 0 {
				t.Errorf("restarted run: %s %s, %d identities left", rep.Run.Outcome, rep.Run.Error, identityCount(e))
			}
		})
	}
}

func containsFold(l []string, s string) bool {
	for _, x := range l {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
