package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// TestBrowserOtherWriter: a resource marked written by another writer with
// gitaso's own principal (reconcile's Activity Log check) says so in the
// resource list and on its page, with the caller, the operation and when;
// a resource without the mark says nothing of it.
func TestBrowserOtherWriter(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	const caller = "046c0e63-1242-4f75-85c7-12aa60ca7882"
	if err := f.db.Update(func(w *state.Writer) error {
		r, ok, err := w.Resource(keyIdentity)
		if err != nil || !ok {
			t.Fatalf("fixture: %s: %v %v", keyIdentity, ok, err)
		}
		now := time.Now().UTC()
		r.OtherWriter = &record.OtherWriter{Caller: caller, Operation: "Microsoft.ManagedIdentity/userAssignedIdentities/write",
			At: now.Add(-time.Minute), Writes: 3, SeenAt: now}
		return w.PutResource(r)
	}); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, f.srv.URL+"/#resource/platform/managedidentity.azure.com/UserAssignedIdentity/team-a-identity")
	d := text(element(t, dom, "section", `id="other-writer"`))
	for _, want := range []string{"Another writer uses gitaso's principal", "3 writes", caller, "Microsoft.ManagedIdentity/userAssignedIdentities/write", "another gitaso with its own state file"} {
		if !strings.Contains(d, want) {
			t.Errorf("the resource page's other-writer section lacks %q:\n%s", want, d)
		}
	}
	dom = dumpDOM(t, f.srv.URL+"/#resource/platform/storage.azure.com/StorageAccount/teamastorage")
	if strings.Contains(dom, `id="other-writer"`) {
		t.Error("a resource without the mark shows the other-writer section")
	}
	dom = dumpDOM(t, f.srv.URL+"/#resources")
	row := element(t, dom, "tr", `data-key="`+keyIdentity+`"`)
	if !strings.Contains(text(row), "Another writer uses gitaso's principal") {
		t.Errorf("the resource list's row lacks the mark: %s", text(row))
	}
	if n := strings.Count(dom, `class="other-writer"`); n != 1 {
		t.Errorf("%d rows marked, want 1", n)
	}
}
