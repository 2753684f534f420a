package cli

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/internal/syncbuf"
)

// TestSessionKeyMadeOnce: without --session-key-file the key is made beside
// the state at the first start (mode 0600) and the same key is read at the
// next; a given file that is missing or short is an error.
func TestSessionKeyMadeOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gitaso.db.session-key")
	k1, err := sessionKey(path, true)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || len(k1) < 32 {
		t.Fatalf("key file %v %v, key %d bytes", st, err, len(k1))
	}
	k2, err := sessionKey(path, true)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("second start: another key or %v", err)
	}
	if _, err := sessionKey(filepath.Join(t.TempDir(), "absent"), false); err == nil {
		t.Error("a missing --session-key-file was accepted")
	}
	short := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(short, []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sessionKey(short, false); err == nil {
		t.Error("a 10-byte key was accepted")
	}
}

// TestTokensReloadOnHangup: SIGHUP re-reads the tokens file.
func TestTokensReloadOnHangup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte(api.TokenEntry{Name: "ci", Hash: api.HashToken("t")}.Line()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncbuf.Buffer{}
	log := slog.New(slog.NewTextHandler(logs, nil))
	a := &authSettings{tokensFile: file}
	var o api.Options
	if err := a.apply(&o, "127.0.0.1:0", filepath.Join(t.TempDir(), "gitaso.db"), log); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a.reloadOnHangup(ctx, log)
	if n := strings.Count(logs.String(), "tokens file read"); n != 1 {
		t.Fatalf("%d reads before SIGHUP, want 1", n)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for strings.Count(logs.String(), "tokens file read") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("SIGHUP did not re-read the tokens file:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
