package reconcile_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
)

// TestApproveSupersededHeldRevision: a held revision that a newer commit
// superseded is not approved: ApproveDeletions answers *SupersededError
// naming both revisions, POST /api/v1/approve answers 409 superseded with
// held and current, and no approval is recorded (before, the answer was 202
// accepted and the approval released nothing). The held revision that is
// current is approved as before.
func TestApproveSupersededHeldRevision(t *testing.T) {
	e := newRefusedEnv(t)
	if _, err := e.poll(t); err != nil {
		t.Fatal(err)
	}
	// Emptying the directory is held (an empty revision deletes everything).
	if err := os.Remove(filepath.Join(e.dir, "rg.yaml")); err != nil {
		t.Fatal(err)
	}
	rep, err := e.poll(t)
	if err != nil || rep.Run.Outcome != record.OutcomeHeld {
		t.Fatalf("emptied revision: %+v %v, want held", rep.Run, err)
	}
	held := rep.Run.Revision
	// A newer revision, held too, supersedes it.
	e.write(t, "other.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: note\n  namespace: ops\ndata:\n  a: b\n")
	rep, err = e.poll(t)
	if err != nil || rep.Run.Outcome != record.OutcomeHeld || rep.Run.Revision == held {
		t.Fatalf("newer revision: %+v %v, want held, another revision", rep.Run, err)
	}
	current := rep.Run.Revision

	err = e.rec.ApproveDeletions(t.Context(), held)
	var sup *reconcile.SupersededError
	if !errors.As(err, &sup) || !errors.Is(err, reconcile.ErrSuperseded) || sup.Held != held || sup.Current != current {
		t.Fatalf("approve %s: %v, want SupersededError(held %s, current %s)", held, err, held, current)
	}
	if _, ok, _ := e.db.Approval(held); ok {
		t.Error("an approval of the superseded revision was recorded")
	}

	req, _ := http.NewRequest(http.MethodPost, e.api.URL+"/api/v1/approve", strings.NewReader(`{"revision":"`+held[:12]+`"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Error struct{ Code, Message, Held, Current string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusConflict || body.Error.Code != "superseded" || body.Error.Held != held || body.Error.Current != current ||
		!strings.Contains(body.Error.Message, held) || !strings.Contains(body.Error.Message, current) {
		t.Errorf("POST /api/v1/approve of a superseded revision: %d %+v, want 409 superseded naming %s and %s", resp.StatusCode, body.Error, held, current)
	}

	if err := e.rec.ApproveDeletions(t.Context(), current); err != nil {
		t.Errorf("approve the current held revision: %v", err)
	}
	if _, ok, _ := e.db.Approval(current); !ok {
		t.Error("the approval of the current held revision is not recorded")
	}
}
