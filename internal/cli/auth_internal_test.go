package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
