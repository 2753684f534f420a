package reconcile_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

const gitPassword = "hunter2-git-token"

// gitLoop is the daemon loop over a repository of one resource group served
// by a real Git server (git http-backend over HTTPS with basic auth),
// against the emulator, with the API in front of it. It polls only when
// told (Poll: one fetch), so that "within one poll" is exact.
type gitLoop struct {
	git *gittest.Server
	db  *state.DB
	rec *reconcile.Reconciler
	api *httptest.Server
}

func startGitLoop(t *testing.T, gitTimeout time.Duration) *gitLoop {
	t.Helper()
	if testing.Short() {
		t.Skip("emulator")
	}
	env := emutest.New(t)
	srv := gittest.NewServer(t, gittest.WithBasicAuth("gitaso", gitPassword))
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"infra/rg.yaml": "apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: git-rg\n  namespace: ops\nspec:\n  location: westeurope\n"}, nil, "first")
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	// The password in the URL: it must never be shown.
	u := strings.Replace(repo.URL(), "https://", "https://gitaso:"+gitPassword+"@", 1)
	src, err := source.NewGit(source.GitOptions{URL: u, Branch: "main", Path: "infra", CABundle: srv.CABundle(),
		CacheDir: t.TempDir(), Timeout: gitTimeout, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Interval = time.Hour           // only Poll fetches
	cfg.UnreadyAfter = time.Nanosecond // not ready at the first failure
	rec := reconcile.New(src, db, env.Clients, cfg, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	h := api.New(db, api.Options{Sync: rec.Sync, Ready: rec.Ready, Status: rec.Status, Metrics: metrics.New(), Logger: quiet})
	l := &gitLoop{git: srv, db: db, rec: rec, api: httptest.NewServer(h)}
	t.Cleanup(l.api.Close)
	l.waitStatus(t, "the startup run", func(h record.Health) bool { return h.Ready })
	return l
}

// status is GET /api/v1/status.
func (l *gitLoop) status(t *testing.T) record.Health {
	t.Helper()
	resp, err := http.Get(l.api.URL + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/status: %d %s", resp.StatusCode, body)
	}
	if strings.Contains(string(body), gitPassword) {
		t.Errorf("GET /api/v1/status shows the Git password: %s", body)
	}
	var h record.Health
	if err := json.Unmarshal(body, &h); err != nil {
		t.Fatalf("GET /api/v1/status: %v: %s", err, body)
	}
	return h
}

func (l *gitLoop) waitStatus(t *testing.T, what string, ok func(record.Health) bool) record.Health {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		h := l.status(t)
		if ok(h) {
			return h
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: status %+v", what, h)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// poll triggers one fetch (a webhook's) and waits until it was made.
func (l *gitLoop) poll(t *testing.T) record.Health {
	t.Helper()
	before := l.status(t).Source.LastAttemptAt
	if err := l.rec.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	return l.waitStatus(t, "the poll's fetch", func(h record.Health) bool { return h.Source.LastAttemptAt.After(before) })
}

// get answers the status code and body of a GET.
func (l *gitLoop) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(l.api.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if strings.Contains(string(body), gitPassword) {
		t.Errorf("GET %s shows the Git password", path)
	}
	return resp.StatusCode, string(body)
}

// metric reads one unlabelled sample of GET /metrics.
func (l *gitLoop) metric(t *testing.T, name string) float64 {
	t.Helper()
	_, body := l.get(t, "/metrics")
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("/metrics has no %s", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestLoopSourceFailureVisible: a Git server that starts refusing (503),
// and one that accepts and never answers, are seen after one poll in GET
// /api/v1/status (the error, since when, how many times), in /metrics and
// in /readyz; the loop goes on (the hung fetch is abandoned after the
// timeout) and the next poll that fetches clears all of it.
func TestLoopSourceFailureVisible(t *testing.T) {
	l := startGitLoop(t, 5*time.Second)
	h := l.status(t)
	if h.Source.Failing || h.Source.LastSuccessAt.IsZero() || h.Source.Revision == "" || !strings.HasSuffix(h.Source.URL, "/platform.git") || h.Source.Branch != "main" {
		t.Fatalf("status after the startup run: %+v", h.Source)
	}
	lastSuccess := l.metric(t, "gitaso_source_last_success_timestamp_seconds")
	if lastSuccess != float64(h.Source.LastSuccessAt.UnixNano())/1e9 {
		t.Errorf("gitaso_source_last_success_timestamp_seconds %v, want %v", lastSuccess, h.Source.LastSuccessAt)
	}
	for _, tc := range []struct {
		name  string
		fault gittest.Fault
		want  string // in the error
	}{
		{"refusing", gittest.FaultRefuse, "503"},
		{"never answering", gittest.FaultHang, "no answer within 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.git.SetFault(tc.fault)
			start := time.Now()
			h := l.poll(t)
			s := h.Source
			if !s.Failing || s.ConsecutiveFailures != 1 || !strings.Contains(s.Error, tc.want) || !strings.Contains(s.Error, "platform.git") {
				t.Fatalf("after one failed poll: %+v", s)
			}
			if s.FailingSince.Before(start) || !s.LastSuccessAt.Before(start) {
				t.Errorf("failingSince %v, lastSuccessAt %v; the failure started after %v", s.FailingSince, s.LastSuccessAt, start)
			}
			if h.Ready || !strings.Contains(h.Reason, "the source cannot be fetched since") {
				t.Errorf("ready %v (%q) while the source fails", h.Ready, h.Reason)
			}
			if code, body := l.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, tc.want) {
				t.Errorf("/readyz %d %q, want 503 with the error", code, body)
			}
			if v := l.metric(t, "gitaso_source_consecutive_failures"); v != 1 {
				t.Errorf("gitaso_source_consecutive_failures %v, want 1", v)
			}
			if v := l.metric(t, "gitaso_ready"); v != 0 {
				t.Errorf("gitaso_ready %v, want 0", v)
			}
			if v := l.metric(t, "gitaso_source_last_success_timestamp_seconds"); v != float64(s.LastSuccessAt.UnixNano())/1e9 {
				t.Errorf("gitaso_source_last_success_timestamp_seconds moved to %v on a failure", v)
			}
			// The loop goes on: a second poll fails again and counts.
			if h := l.poll(t); h.Source.ConsecutiveFailures != 2 || !h.Source.FailingSince.Equal(s.FailingSince) {
				t.Errorf("after a second failed poll: %+v", h.Source)
			}
			l.git.SetFault(gittest.FaultNone)
			h = l.poll(t)
			if h.Source.Failing || h.Source.Error != "" || h.Source.ConsecutiveFailures != 0 || !h.Source.LastSuccessAt.After(start) || !h.Ready {
				t.Fatalf("after the source answers again: %+v", h)
			}
			if code, _ := l.get(t, "/readyz"); code != http.StatusOK {
				t.Errorf("/readyz %d after recovery", code)
			}
			if v := l.metric(t, "gitaso_source_consecutive_failures"); v != 0 {
				t.Errorf("gitaso_source_consecutive_failures %v after recovery", v)
			}
		})
	}
	if v := l.metric(t, "gitaso_source_failures_total"); v != 4 {
		t.Errorf("gitaso_source_failures_total %v, want 4", v)
	}
}
