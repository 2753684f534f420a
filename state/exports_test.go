package state

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

const secretValue = "TOP-SECRET-storage-key-0123456789=="

func TestExportsRoundTrip(t *testing.T) {
	db, path := openTemp(t)
	cm := map[string]string{"principalId": "11111111-2222", "clientId": "3333"}
	if err := db.Update(func(w *Writer) error {
		if err := w.PutExports("team-a", "identity-settings", cm); err != nil {
			return err
		}
		if err := w.PutExports("team-ab", "other", map[string]string{"x": "y"}); err != nil {
			return err
		}
		// Read-modify-write inside the same transaction sees its own write.
		m, ok, err := w.Exports("team-a", "identity-settings")
		if err != nil || !ok {
			t.Errorf("Writer.Exports: ok=%v err=%v", ok, err)
		}
		m["tenantId"] = "tttt"
		return w.PutExports("team-a", "identity-settings", m)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got, ok, err := db.Exports("team-a", "identity-settings")
	if err != nil || !ok {
		t.Fatalf("Exports: ok=%v err=%v", ok, err)
	}
	want := map[string]string{"principalId": "11111111-2222", "clientId": "3333", "tenantId": "tttt"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	all, err := db.ExportsIn("team-a")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(map[string]map[string]string{"identity-settings": want}, all); d != "" {
		t.Errorf("ExportsIn (-want +got):\n%s", d)
	}
	if err := db.Update(func(w *Writer) error { return w.DeleteExports("team-a", "identity-settings") }); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.Exports("team-a", "identity-settings"); ok {
		t.Error("exports still present after delete")
	}
}

func TestSecretExportsEncryptedAtRest(t *testing.T) {
	db, path := openTemp(t)
	secrets := map[string]string{"key1": secretValue, "connectionString": "Endpoint=sb://x;SharedAccessKey=" + secretValue}
	if err := db.Update(func(w *Writer) error { return w.PutSecretExports("team-a", "sa-keys", secrets) }); err != nil {
		t.Fatal(err)
	}
	mode, err := fileMode(path + ".key")
	if err != nil {
		t.Fatalf("key file not created: %v", err)
	}
	if mode != 0o600 {
		t.Errorf("key file mode = %04o, want 0600", mode)
	}
	got, ok, err := db.SecretExports("team-a", "sa-keys")
	if err != nil || !ok {
		t.Fatalf("SecretExports: ok=%v err=%v", ok, err)
	}
	if d := cmp.Diff(secrets, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	keys, ok, err := db.SecretExportKeys("team-a", "sa-keys")
	if err != nil || !ok {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"connectionString", "key1"}, keys); d != "" {
		t.Errorf("keys (-want +got):\n%s", d)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, needle := range []string{secretValue, "TOP-SECRET", base64.StdEncoding.EncodeToString([]byte(secretValue)), "SharedAccessKey"} {
		if bytes.Contains(raw, []byte(needle)) {
			t.Errorf("database file contains %q in plaintext", needle)
		}
	}
	if !bytes.Contains(raw, []byte("connectionString")) {
		t.Error("key names should be stored in clear (sanity check that the scan works)")
	}

	// Reopen: the key file is found again and decrypts.
	db, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err = db.SecretExports("team-a", "sa-keys")
	if err != nil || got["key1"] != secretValue {
		t.Errorf("after reopen: %v, %v", got["key1"] == secretValue, err)
	}
	db.Close()

	// A different caller-supplied key is refused at Open.
	other := make([]byte, 32)
	_, _ = rand.Read(other)
	if _, err := Open(path, WithEncryptionKey(other)); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("Open with wrong key = %v, want ErrKeyMismatch", err)
	}

	// A key file readable by others is refused.
	if err := os.Chmod(path+".key", 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Open with 0644 key file = %v, want a mode error", err)
	}
}

func TestSecretExportsCallerKey(t *testing.T) {
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	db, path := openTemp(t, WithEncryptionKey(key))
	if err := db.Update(func(w *Writer) error {
		return w.PutSecretExports("ns", "s", map[string]string{"password": secretValue})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".key"); !os.IsNotExist(err) {
		t.Errorf("key file created although a key was supplied: %v", err)
	}
	// A ciphertext is bound to its namespace/name: moving it fails to open.
	raw := db.bolt
	if err := raw.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSecrets)
		return b.Put(exportKey("ns", "moved"), bytes.Clone(b.Get(exportKey("ns", "s"))))
	}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.SecretExports("ns", "moved"); !errors.Is(err, ErrKeyMismatch) {
		t.Errorf("moved ciphertext opened: %v", err)
	}
	db.Close()
	if _, err := Open(path, WithEncryptionKey(key[:16])); err == nil {
		t.Error("16-byte key accepted")
	}
	db2, err := Open(path, WithoutKeyFile())
	if err != nil {
		t.Fatalf("Open without key should still work for non-secret data: %v", err)
	}
	defer db2.Close()
	if _, _, err := db2.SecretExports("ns", "s"); !errors.Is(err, ErrNoKey) {
		t.Errorf("SecretExports without key = %v, want ErrNoKey", err)
	}
	if keys, ok, err := db2.SecretExportKeys("ns", "s"); err != nil || !ok || len(keys) != 1 {
		t.Errorf("SecretExportKeys without key = %v %v %v", keys, ok, err)
	}
}
