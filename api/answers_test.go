package api_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// rawGet fetches path asking for encoding ("" or "gzip") and returns the
// status, the headers and the body as sent, and decoded.
func (f *pagesFixture) rawGet(t *testing.T, path, encoding string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if encoding != "" {
		req.Header.Set("Accept-Encoding", encoding)
	}
	// No transparent decoding: the test sees what was sent.
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	defer client.CloseIdleConnections()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("GET %s: gzip answer: %v", path, err)
		}
		if body, err = io.ReadAll(zr); err != nil {
			t.Fatalf("GET %s: gzip answer: %v", path, err)
		}
	}
	return resp.StatusCode, resp.Header, body
}

// keysOf lists the keys of a list answer.
func keysOf(t *testing.T, body []byte) []string {
	t.Helper()
	l := decode[list](t, body)
	out := []string{}
	for _, r := range l.Items {
		out = append(out, record.ResourceKey(r.Namespace, r.Group, r.Kind, r.Name))
	}
	return out
}

// wantKeys lists what state holds for a filter, read from state itself.
func wantKeys(t *testing.T, db *state.DB, f record.Filter) []string {
	t.Helper()
	rs, err := db.Resources(f)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, r := range rs {
		out = append(out, r.Key())
	}
	return out
}

// Every list, the graph and the summary answer the state as it is now, in
// both encodings, identical once decoded: answers kept encoded are dropped
// when a resource changes, is added or is removed, and kept when a commit
// writes no resource.
func TestAnswersFollowTheState(t *testing.T) {
	f := newPages(t)
	var rs []record.Resource
	for i := range 40 {
		st := "True"
		if i%7 == 3 {
			st = "False"
		}
		rs = append(rs, acct(fmt.Sprintf("acct%02d", i), st))
	}
	f.put(t, rs...)
	paths := []string{
		"/api/v1/resources?limit=10",
		"/api/v1/resources?limit=500&ready=false",
		"/api/v1/resources?ready=False",
		"/api/v1/resources",
		"/api/v1/resources?limit=2000",
		"/api/v1/summary",
		"/api/v1/graph",
	}
	check := func(when string) map[string][]byte {
		t.Helper()
		out := map[string][]byte{}
		for _, p := range paths {
			// Twice each: built, then from what was kept.
			for range 2 {
				code, h, plain := f.rawGet(t, p, "")
				if code != http.StatusOK || h.Get("Content-Encoding") != "" {
					t.Fatalf("%s: GET %s: %d, Content-Encoding %q", when, p, code, h.Get("Content-Encoding"))
				}
				code, h, gz := f.rawGet(t, p, "gzip, deflate")
				// Answers under 1 KiB are not worth compressing.
				wantGzip := len(plain) >= 1024
				if code != http.StatusOK || (h.Get("Content-Encoding") == "gzip") != wantGzip || wantGzip && !strings.Contains(h.Get("Vary"), "Accept-Encoding") {
					t.Fatalf("%s: GET %s with gzip: %d, Content-Encoding %q, Vary %q", when, p, code, h.Get("Content-Encoding"), h.Get("Vary"))
				}
				if !bytes.Equal(plain, gz) {
					t.Errorf("%s: GET %s: the gzip answer differs from the plain one:\n%s\n%s", when, p, plain, gz)
				}
				_, h, refused := f.rawGet(t, p, "gzip;q=0")
				if h.Get("Content-Encoding") != "" || !bytes.Equal(refused, plain) {
					t.Errorf("%s: GET %s with gzip;q=0: Content-Encoding %q", when, p, h.Get("Content-Encoding"))
				}
				out[p] = plain
			}
		}
		if d := cmp.Diff(wantKeys(t, f.db, record.Filter{Ready: "False"}), keysOf(t, out["/api/v1/resources?ready=False"])); d != "" {
			t.Errorf("%s: ready=False (-state +answer):\n%s", when, d)
		}
		all := wantKeys(t, f.db, record.Filter{})
		if d := cmp.Diff(all, keysOf(t, out["/api/v1/resources"])); d != "" {
			t.Errorf("%s: every resource (-state +answer):\n%s", when, d)
		}
		if d := cmp.Diff(all[:10], keysOf(t, out["/api/v1/resources?limit=10"])); d != "" {
			t.Errorf("%s: first page (-state +answer):\n%s", when, d)
		}
		if !bytes.Equal(out["/api/v1/resources?limit=2000"], out["/api/v1/resources"]) {
			t.Errorf("%s: one page of every resource differs from the unpaged list", when)
		}
		s := decode[api.Summary](t, out["/api/v1/summary"])
		if s.Total != len(all) || s.Ready["False"] != len(wantKeys(t, f.db, record.Filter{Ready: "False"})) {
			t.Errorf("%s: summary %+v; state holds %d", when, s, len(all))
		}
		g := decode[api.Graph](t, out["/api/v1/graph"])
		if d := cmp.Diff(all, g.Keys); d != "" {
			t.Errorf("%s: graph keys (-state +answer):\n%s", when, d)
		}
		return out
	}
	before := check("at first")

	// A commit that writes no resource changes no answer.
	if err := f.db.Update(func(w *state.Writer) error {
		return w.PutRun(&record.Run{Revision: "r2", Trigger: "interval", StartedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	same := check("after a run was written")
	for _, p := range paths {
		if !bytes.Equal(before[p], same[p]) {
			t.Errorf("GET %s changed though no resource did", p)
		}
	}

	// acct00 becomes not ready, acct01 goes, acct99 comes.
	changed := acct("acct00", "False")
	changed.Ready.Reason = "AuthorizationFailed"
	if err := f.db.Update(func(w *state.Writer) error {
		if err := w.PutResource(changed); err != nil {
			return err
		}
		if err := w.DeleteResource(rs[1].Key()); err != nil {
			return err
		}
		return w.PutResource(acct("acct99", "Unknown"))
	}); err != nil {
		t.Fatal(err)
	}
	after := check("after resources changed")
	page := decode[list](t, after["/api/v1/resources?limit=10"])
	if page.Items[0].Name != "acct00" || page.Items[0].Ready.Reason != "AuthorizationFailed" || page.Items[1].Name != "acct02" {
		t.Errorf("first page after the change: %v, %+v", ids(page), page.Items[0].Ready)
	}
	if !slices.Contains(keysOf(t, after["/api/v1/resources?limit=500&ready=false"]), changed.Key()) {
		t.Errorf("ready=false does not list %s, which became not ready", changed.Key())
	}
	if s := decode[api.Summary](t, after["/api/v1/summary"]); s.Ready["Unknown"] != 1 {
		t.Errorf("summary after acct99 (Unknown) was added: %+v", s)
	}
}

// The plan is served as stored, and the newest one as soon as it is stored:
// a compressed plan (the reconciler stores it so) as it is to clients that
// accept gzip and decompressed for the others; a plain one (older state
// files) plain.
func TestPlanAnswerFollowsTheState(t *testing.T) {
	f := newPages(t)
	if code, _, _ := f.rawGet(t, "/api/v1/plan", "gzip"); code != http.StatusNotFound {
		t.Errorf("GET /api/v1/plan before any plan: %d, want 404", code)
	}
	for i := range 4 {
		plan := fmt.Appendf(nil, `{"revision":"rev%d","resources":[%s]}`, i,
			strings.Repeat(fmt.Sprintf(`{"namespace":"ns","kind":"StorageAccount","name":"a%d","action":"update"},`, i), 50)+`{}`)
		stored, compressed := plan, i%2 == 1
		if compressed {
			var b bytes.Buffer
			zw := gzip.NewWriter(&b)
			_, _ = zw.Write(plan)
			_ = zw.Close()
			stored = b.Bytes()
		}
		if err := f.db.Update(func(w *state.Writer) error { return w.SetPlan(stored) }); err != nil {
			t.Fatal(err)
		}
		for _, enc := range []string{"", "gzip", ""} {
			code, h, body := f.rawGet(t, "/api/v1/plan", enc)
			wantGzip := compressed && enc == "gzip"
			if code != http.StatusOK || !bytes.Equal(body, plan) || (h.Get("Content-Encoding") == "gzip") != wantGzip {
				t.Errorf("plan %d (stored compressed %v), Accept-Encoding %q: %d, Content-Encoding %q, body %.60s…; want the plan",
					i, compressed, enc, code, h.Get("Content-Encoding"), body)
			}
		}
	}
}

// GET /api/v1/runs/{id}/plan serves the kept plans of the earlier phases of
// the latest run (as stored, like /api/v1/plan), 404 for any other run and
// 400 for a bad id; a new first phase drops them.
func TestRunPlanOfEarlierPhase(t *testing.T) {
	f := newPages(t)
	plan1 := []byte(`{"revision":"rev","resources":[{"namespace":"ns","kind":"ResourceGroup","name":"rg","action":"create"}]}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(plan1)
	_ = zw.Close()
	plan2 := []byte(`{"revision":"rev","resources":[{"namespace":"ns","kind":"RoleAssignment","name":"ra","action":"create"}]}`)
	err := f.db.Update(func(w *state.Writer) error {
		if err := w.ClearPhasePlans(); err != nil {
			return err
		}
		if err := w.SetPlan(gz.Bytes()); err != nil {
			return err
		}
		if err := w.KeepPhasePlan(7); err != nil { // phase 2 of run 7 begins
			return err
		}
		return w.SetPlan(plan2)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, enc := range []string{"", "gzip"} {
		code, h, body := f.rawGet(t, "/api/v1/runs/7/plan", enc)
		if code != http.StatusOK || !bytes.Equal(body, plan1) || (h.Get("Content-Encoding") == "gzip") != (enc == "gzip") {
			t.Errorf("run 7's plan, Accept-Encoding %q: %d %q %.80s; want phase 1's plan", enc, code, h.Get("Content-Encoding"), body)
		}
	}
	if code, _, body := f.rawGet(t, "/api/v1/plan", ""); code != http.StatusOK || !bytes.Equal(body, plan2) {
		t.Errorf("latest plan: %d %.80s; want phase 2's", code, body)
	}
	for path, want := range map[string]int{"/api/v1/runs/8/plan": http.StatusNotFound, "/api/v1/runs/x/plan": http.StatusBadRequest, "/api/v1/runs/0/plan": http.StatusBadRequest} {
		if code, _, _ := f.rawGet(t, path, ""); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}
	if err := f.db.Update(func(w *state.Writer) error { return w.ClearPhasePlans() }); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := f.rawGet(t, "/api/v1/runs/7/plan", ""); code != http.StatusNotFound {
		t.Errorf("run 7's plan after a new first phase: %d, want 404", code)
	}
}
