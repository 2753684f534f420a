package api_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
)

// TestStatus: GET /api/v1/status answers Options.Status as it is, and
// /metrics exports it; without Status it says what Ready says.
func TestStatus(t *testing.T) {
	since := time.Date(2026, 11, 28, 4, 0, 0, 0, time.UTC)
	h := record.Health{Reason: "the source cannot be fetched since ...",
		Source: record.SourceHealth{URL: "https://git.example.com/platform.git", Branch: "main", Failing: true, Error: "git fetch: 503",
			FailingSince: since, ConsecutiveFailures: 3, FailuresTotal: 7, LastAttemptAt: since.Add(2 * time.Minute),
			LastSuccessAt: since.Add(-time.Minute), Revision: "c0ffee"},
		State: record.StateHealth{Failing: true, Error: "record plan: no space left on device", FailingSince: since,
			ConsecutiveFailures: 2, FailuresTotal: 2, NextRetryAt: since.Add(4 * time.Second)}}
	f := newFixture(t, api.Options{Status: func() record.Health { return h }}, false)
	code, _, body := f.do(t, "GET", "/api/v1/status", "")
	if got := decode[record.Health](t, body); code != 200 || !cmp.Equal(got, h) {
		t.Errorf("GET /api/v1/status: %d %s, want %+v", code, body, h)
	}
	_, _, metrics := f.do(t, "GET", "/metrics", "")
	for _, want := range []string{
		"gitaso_source_last_success_timestamp_seconds 1.79583834e+09",
		"gitaso_source_consecutive_failures 3",
		"gitaso_source_failures_total 7",
		"gitaso_state_write_consecutive_failures 2",
		"gitaso_state_write_failures_total 2",
		"gitaso_ready 0",
	} {
		if !strings.Contains(string(metrics), want+"\n") {
			t.Errorf("/metrics lacks %q", want)
		}
	}

	notReady := newFixture(t, api.Options{Ready: func() error { return errors.New("no revision applied yet") }}, false)
	code, _, body = notReady.do(t, "GET", "/api/v1/status", "")
	if got := decode[record.Health](t, body); code != 200 || got.Ready || got.Reason != "no revision applied yet" || got.Source.Failing {
		t.Errorf("GET /api/v1/status with Ready only: %d %s", code, body)
	}
	if code, _, _ := notReady.do(t, "POST", "/api/v1/status", ""); code != 405 {
		t.Errorf("POST /api/v1/status: %d, want 405", code)
	}
}
