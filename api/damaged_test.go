package api_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// A page of the state file damaged under the running API: GET /api/v1/runs
// answers 503 state_damaged with the damage and the ways out in its JSON
// error, not a handler panic's 500, and /readyz turns 503 saying so.
func TestAPIDamagedStatePage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gitaso.db")
	db, err := state.Open(path, state.WithoutKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		if err := db.Update(func(w *state.Writer) error {
			return w.PutRun(&record.Run{Revision: fmt.Sprintf("%040d", i), Trigger: "interval", StartedAt: time.Unix(int64(i), 0),
				FinishedAt: time.Unix(int64(i)+1, 0), Outcome: record.OutcomeSucceeded, Error: strings.Repeat("e", 100)})
		}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	// The runs bucket's root page, as bbolt reads it.
	bdb, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root int64
	_ = bdb.View(func(tx *bolt.Tx) error { root = int64(tx.Bucket([]byte("runs")).Root()); return nil })
	bdb.Close()
	if root == 0 {
		t.Fatal("the runs bucket is inline: write more runs")
	}
	db, err = state.Open(path, state.WithoutKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	srv := httptest.NewServer(api.New(db, api.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}))
	defer srv.Close()
	get := func(p string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz before the damage: %d %s", code, body)
	}

	// Random bytes over the page, through the file: bbolt's shared mapping
	// sees them.
	b := make([]byte, 4096)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(b, root*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()

	code, body := get("/api/v1/runs")
	var e api.ErrorBody
	if err := json.Unmarshal([]byte(body), &e); err != nil {
		t.Fatalf("/api/v1/runs: %d %q: %v", code, body, err)
	}
	if code != http.StatusServiceUnavailable || e.Error.Code != api.CodeStateDamaged {
		t.Errorf("/api/v1/runs over a damaged page: %d %s, want 503 %s", code, body, api.CodeStateDamaged)
	}
	for _, want := range []string{path + " is damaged", "gitaso state check --state " + path, "restore a backup", "gitaso state rebuild --state " + path} {
		if !strings.Contains(e.Error.Message, want) {
			t.Errorf("the error does not say %q: %s", want, e.Error.Message)
		}
	}
	if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "is damaged") {
		t.Errorf("/readyz after the damage: %d %s", code, body)
	}
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d: the process is up", code)
	}
}
