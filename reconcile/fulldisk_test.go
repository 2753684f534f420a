package reconcile_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/emutest"
	"github.com/gitaso/gitaso/metrics"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// smallDisk mounts a tmpfs of size bytes for the test and returns its
// directory; it skips the test where mounting is not allowed (not root, or
// a container without CAP_SYS_ADMIN).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput()
	if err != nil {
		t.Skipf("a full file system needs a tmpfs mount, which is not allowed here (uid %d): %v: %s", os.Getuid(), err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fill writes a file into dir until its file system is full and returns
// the file's path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return p
		}
	}
}

func resourceGroups(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: disk-rg-%03d\n  namespace: ops\nspec:\n  location: westeurope\n  tags:\n    purpose: a full disk must not lose this run %03d\n", i, i)
	}
	return b.String()
}

// TestLoopFullDiskRetriedAndShown: with the state file on a real file
// system that is full, a run that cannot record its plan applies nothing,
// is shown at once (GET /api/v1/status, /metrics, /readyz) and is retried
// with a back-off, without a trigger and long before the sync period; once
// there is room again a retry applies the revision and clears it all.
func TestLoopFullDiskRetriedAndShown(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	disk := smallDisk(t, 4<<20)
	l, env, write, _ := startDirLoop(t, filepath.Join(disk, "state.db"), resourceGroups(1), nil,
		func(c *reconcile.Config) { c.UnreadyAfter = time.Nanosecond })
	db, rec, ctx := l.db, l.rec, context.Background()

	filler := fill(t, disk)
	write(resourceGroups(200)) // a plan and records far larger than the free pages of the state file
	if err := rec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	h := l.waitStatus(t, "the state failure", func(h record.Health) bool { return h.State.Failing })
	st := h.State
	if !strings.Contains(st.Error, "no space left on device") || st.ConsecutiveFailures < 1 || st.FailingSince.IsZero() || st.NextRetryAt.IsZero() {
		t.Fatalf("state status after the full disk: %+v", st)
	}
	if h.Ready || !strings.Contains(h.Reason, "the state cannot be written since") {
		t.Errorf("ready %v (%q) while the state cannot be written", h.Ready, h.Reason)
	}
	if code, body := l.get(t, "/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "no space left on device") {
		t.Errorf("/readyz %d %q, want 503 with the error", code, body)
	}
	if v := l.metric(t, "gitaso_state_write_failures_total"); v < 1 {
		t.Errorf("gitaso_state_write_failures_total %v", v)
	}
	if v := l.metric(t, "gitaso_state_write_consecutive_failures"); v < 1 {
		t.Errorf("gitaso_state_write_consecutive_failures %v", v)
	}
	// Nothing of the revision was applied.
	if _, err := env.Client.Get(ctx, "/subscriptions/"+env.Sub+"/resourceGroups/disk-rg-199", "2020-06-01"); err == nil {
		t.Errorf("disk-rg-199 was created although its run could not be recorded")
	}
	// Room again: a retry (no trigger) records and applies the revision.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	h = l.waitStatus(t, "the retry after the disk has room", func(h record.Health) bool { return !h.State.Failing })
	if h.State.Error != "" || h.State.ConsecutiveFailures != 0 || !h.State.NextRetryAt.IsZero() || h.State.FailuresTotal < 1 {
		t.Errorf("state status after recovery: %+v", h.State)
	}
	l.waitStatus(t, "ready again", func(h record.Health) bool { return h.Ready })
	if v := l.metric(t, "gitaso_state_write_consecutive_failures"); v != 0 {
		t.Errorf("gitaso_state_write_consecutive_failures %v after recovery", v)
	}
	runs, err := db.Runs(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Trigger != "retry" || runs[0].Outcome != record.OutcomeSucceeded {
		t.Errorf("the run after recovery: %+v, want a succeeded retry", runs)
	}
	if _, err := env.Client.Get(ctx, "/subscriptions/"+env.Sub+"/resourceGroups/disk-rg-199", "2020-06-01"); err != nil {
		t.Errorf("disk-rg-199 after the retry: %v", err)
	}
}

// TestLoopFullDiskRefusedRunShown: a refused revision whose run cannot be recorded (the disk is full) is a state
// failure like any other (status, metric, retried), not a line in the log; once there is room, the retry records
// the refusal. Before, the write's error was only logged.
func TestLoopFullDiskRefusedRunShown(t *testing.T) {
	if testing.Short() {
		t.Skip("emulator")
	}
	disk := smallDisk(t, 4<<20)
	l, _, _, dir := startDirLoop(t, filepath.Join(disk, "state.db"), resourceGroups(1), nil, nil)
	db, rec, ctx := l.db, l.rec, context.Background()

	filler := fill(t, disk)
	// 3,000 files each with an input error: the refused run's record (every error, named) needs new pages.
	for i := range 3000 {
		bad := fmt.Sprintf("apiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: bad-%d-%s\nspec:\n  locaton: westeurope\n", i, strings.Repeat("x", 40))
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("bad-%04d.yaml", i)), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	h := l.waitStatus(t, "the state failure of a refused run", func(h record.Health) bool { return h.State.Failing })
	if !strings.Contains(h.State.Error, "no space left on device") || h.State.NextRetryAt.IsZero() {
		t.Fatalf("state status: %+v", h.State)
	}
	if v := l.metric(t, "gitaso_state_write_failures_total"); v < 1 {
		t.Errorf("gitaso_state_write_failures_total %v", v)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	l.waitStatus(t, "the retry after the disk has room", func(h record.Health) bool { return !h.State.Failing })
	runs, err := db.Runs(1)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) != 1 || runs[0].Outcome != record.OutcomeRefused || !strings.Contains(runs[0].Error, "bad-2999") {
		t.Errorf("the run recorded after recovery: %+v, want the refusal naming every file", runs)
	}
}

// startDirLoop runs the loop over a directory source (wrapped by wrap, when set) with its state file at dbPath,
// the emulator as Azure and the API over it, and waits for the startup run; write replaces rg.yaml in the source
// directory dir.
func startDirLoop(t *testing.T, dbPath string, first string, wrap func(source.Source) source.Source, tune func(*reconcile.Config)) (l *gitLoop, env *emutest.Env, write func(string), dir string) {
	t.Helper()
	env = emutest.New(t)
	dir = t.TempDir()
	write = func(content string) {
		if err := os.WriteFile(filepath.Join(dir, "rg.yaml"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(first)
	db, err := state.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := reconcile.DefaultConfig()
	cfg.Global = env.Cred
	cfg.Interval, cfg.SyncPeriod = time.Hour, time.Hour
	if tune != nil {
		tune(&cfg)
	}
	var src source.Source = source.NewDir(dir, "")
	if wrap != nil {
		src = wrap(src)
	}
	rec := reconcile.New(src, db, env.Clients, cfg, quiet)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Loop(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(api.New(db, api.Options{Sync: rec.Sync, Ready: rec.Ready, Status: rec.Status, Metrics: metrics.New(), Logger: quiet}))
	t.Cleanup(srv.Close)
	l = &gitLoop{db: db, rec: rec, api: srv}
	l.waitStatus(t, "the startup run", func(h record.Health) bool { return h.Ready })
	return l, env, write, dir
}
