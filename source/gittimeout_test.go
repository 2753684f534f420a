package source

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/internal/gittest"
)

// fetchWithin runs fetch and fails the test when it has not returned
// within limit: a fetch that hangs is the bug, not a slow machine (the
// source's own timeout is a small fraction of limit).
func fetchWithin(t *testing.T, limit time.Duration, fetch func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- fetch() }()
	select {
	case err := <-done:
		return err
	case <-time.After(limit):
		t.Fatalf("the fetch has not returned after %s: it hangs", limit)
		return nil
	}
}

// TestGitFetchTimeout: a Git server that accepts the connection and never
// answers (over http://, git:// and https://, for a fetch and for Head)
// makes Fetch fail with ErrTimeout after GitOptions.Timeout instead of
// hanging for good; once the server answers again the same Git value
// fetches.
func TestGitFetchTimeout(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	silent := gittest.Silent(t)
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	repo.Commit(map[string]string{"infra/rg.yaml": rgYAML}, nil, "first")
	for _, tc := range []struct {
		name, url string
		hang      bool // the gittest server with FaultHang, cleared afterwards
		// timeout leaves the fetch after the fault room on a loaded machine.
		timeout time.Duration
		want    string
	}{
		{"http silent", "http://" + silent + "/platform.git", false, 300 * time.Millisecond, "no answer within 300ms"},
		{"git silent", "git://" + silent + "/platform.git", false, 300 * time.Millisecond, "no answer within 300ms"},
		{"https hangs then answers", repo.URL(), true, 5 * time.Second, "no answer within 5s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := NewGit(GitOptions{URL: tc.url, Branch: "main", Path: "infra", CABundle: srv.CABundle(), Timeout: tc.timeout, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			if tc.hang {
				srv.SetFault(gittest.FaultHang)
			}
			for _, op := range []struct {
				name string
				do   func() error
			}{
				{"fetch", func() error { _, err := g.Fetch(context.Background()); return err }},
				{"head", func() error { _, err := g.Head(context.Background()); return err }},
			} {
				err := fetchWithin(t, 60*time.Second, op.do)
				if !errors.Is(err, ErrTimeout) {
					t.Fatalf("%s: error %v, want ErrTimeout", op.name, err)
				}
				if msg := err.Error(); !strings.Contains(msg, tc.want) || !strings.Contains(msg, "platform.git") {
					t.Errorf("%s: error %q does not say which server and how long", op.name, msg)
				}
			}
			if !tc.hang {
				return
			}
			srv.SetFault(gittest.FaultNone)
			snap, err := g.Fetch(context.Background())
			if err != nil {
				t.Fatalf("fetch after the server answers again: %v", err)
			}
			if len(snap.Objects) != 1 {
				t.Errorf("%d objects after recovery, want 1", len(snap.Objects))
			}
		})
	}
}

// TestGitFetchCallerCancelIsNotTimeout: the caller's own cancellation is
// reported as such, not as the server's timeout.
func TestGitFetchCallerCancelIsNotTimeout(t *testing.T) {
	silent := gittest.Silent(t)
	g, err := NewGit(GitOptions{URL: "http://" + silent + "/platform.git", Timeout: time.Hour,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err = fetchWithin(t, 60*time.Second, func() error { _, err := g.Fetch(ctx); return err })
	if err == nil || errors.Is(err, ErrTimeout) {
		t.Fatalf("error %v, want the caller's cancellation, not ErrTimeout", err)
	}
}
