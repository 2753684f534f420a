package state

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"

	bolt "go.etcd.io/bbolt"
)

const keySize = 32 // AES-256

// keyCheckPlain is sealed with the key into meta on first use so that a wrong
// key is reported as ErrKeyMismatch rather than as a decryption failure.
var keyCheckPlain = []byte("gitaso state key check v1")

func exportKey(namespace, name string) []byte { return []byte(namespace + "/" + name) }

// PutExports stores the non-secret values exported into ConfigMap name in
// namespace (operatorSpec.configMaps), replacing what was stored.
func (w *Writer) PutExports(namespace, name string, values map[string]string) error {
	v, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("state: put exports %s/%s: %w", namespace, name, err)
	}
	if bytes.Equal(w.tx.Bucket(bucketExports).Get(exportKey(namespace, name)), v) {
		return nil // unchanged: a write would only grow the file
	}
	if err := w.tx.Bucket(bucketExports).Put(exportKey(namespace, name), v); err != nil {
		return fmt.Errorf("state: put exports %s/%s: %w", namespace, name, err)
	}
	return nil
}

// DeleteExports forgets ConfigMap name's exported values.
func (w *Writer) DeleteExports(namespace, name string) error {
	if err := w.tx.Bucket(bucketExports).Delete(exportKey(namespace, name)); err != nil {
		return fmt.Errorf("state: delete exports %s/%s: %w", namespace, name, err)
	}
	return nil
}

// Exports reads ConfigMap name's exported values inside the transaction (for
// read-modify-write when several resources export into one ConfigMap).
func (w *Writer) Exports(namespace, name string) (map[string]string, bool, error) {
	return getExports(w.tx, namespace, name)
}

// Exports returns the non-secret values exported into ConfigMap name.
func (db *DB) Exports(namespace, name string) (map[string]string, bool, error) {
	var (
		m  map[string]string
		ok bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		m, ok, err = getExports(tx, namespace, name)
		return err
	})
	return m, ok, err
}

// ExportsIn returns every exported ConfigMap in namespace: name → key → value.
func (db *DB) ExportsIn(namespace string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	prefix := []byte(namespace + "/")
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketExports).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var m map[string]string
			if err := json.Unmarshal(v, &m); err != nil {
				return fmt.Errorf("decode exports %s: %w", k, err)
			}
			out[string(k[len(prefix):])] = m
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: list exports in %s: %w", namespace, err)
	}
	return out, nil
}

func getExports(tx *bolt.Tx, namespace, name string) (map[string]string, bool, error) {
	v := tx.Bucket(bucketExports).Get(exportKey(namespace, name))
	if v == nil {
		return nil, false, nil
	}
	var m map[string]string
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, false, fmt.Errorf("state: decode exports %s/%s: %w", namespace, name, err)
	}
	return m, true, nil
}

// sealedExports is the stored form of a Secret's exported values: the key
// names in clear (they come from the manifest and are shown by the API), the
// values as one AES-256-GCM ciphertext bound to namespace/name.
type sealedExports struct {
	Keys   []string `json:"keys"`
	Sealed []byte   `json:"sealed"` // nonce || ciphertext of the JSON map
}

// PutSecretExports stores the values exported into Secret name in namespace
// (operatorSpec.secrets), encrypted with AES-256-GCM; the plaintext never
// reaches the file. It creates the key file on first use.
func (w *Writer) PutSecretExports(namespace, name string, values map[string]string) error {
	aead, err := w.db.cipher(true)
	if err != nil {
		return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
	}
	meta := w.tx.Bucket(bucketMeta)
	if meta.Get(metaKeyCheck) == nil {
		check, err := seal(aead, keyCheckPlain, metaKeyCheck)
		if err != nil {
			return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
		}
		if err := meta.Put(metaKeyCheck, check); err != nil {
			return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
		}
	} else if err := verifyKey(aead, meta.Get(metaKeyCheck)); err != nil {
		return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
	}
	plain, err := json.Marshal(values)
	if err != nil {
		return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
	}
	key := exportKey(namespace, name)
	if old := w.tx.Bucket(bucketSecrets).Get(key); old != nil {
		// Unchanged values are not sealed again (a new nonce would make
		// every run rewrite them).
		var prev sealedExports
		if json.Unmarshal(old, &prev) == nil {
			if p, err := open(aead, prev.Sealed, key); err == nil {
				same := bytes.Equal(p, plain)
				clear(p)
				if same {
					clear(plain)
					return nil
				}
			}
		}
	}
	ct, err := seal(aead, plain, key)
	clear(plain)
	if err != nil {
		return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
	}
	rec := sealedExports{Sealed: ct}
	for k := range values {
		rec.Keys = append(rec.Keys, k)
	}
	slices.Sort(rec.Keys)
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
	}
	if err := w.tx.Bucket(bucketSecrets).Put(key, v); err != nil {
		return fmt.Errorf("state: put secret exports %s/%s: %w", namespace, name, err)
	}
	return nil
}

// DeleteSecretExports forgets Secret name's exported values.
func (w *Writer) DeleteSecretExports(namespace, name string) error {
	if err := w.tx.Bucket(bucketSecrets).Delete(exportKey(namespace, name)); err != nil {
		return fmt.Errorf("state: delete secret exports %s/%s: %w", namespace, name, err)
	}
	return nil
}

// SecretExportKeys returns the key names (never the values) exported into
// Secret name, without decrypting anything.
func (db *DB) SecretExportKeys(namespace, name string) ([]string, bool, error) {
	var (
		rec sealedExports
		ok  bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSecrets).Get(exportKey(namespace, name))
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return nil, false, fmt.Errorf("state: read secret export keys %s/%s: %w", namespace, name, err)
	}
	return rec.Keys, ok, nil
}

// SecretExports decrypts and returns the values exported into Secret name.
func (db *DB) SecretExports(namespace, name string) (map[string]string, bool, error) {
	var (
		rec sealedExports
		ok  bool
	)
	key := exportKey(namespace, name)
	err := db.view(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketSecrets).Get(key)
		if v == nil {
			return nil
		}
		ok = true
		return json.Unmarshal(v, &rec)
	})
	if err != nil {
		return nil, false, fmt.Errorf("state: read secret exports %s/%s: %w", namespace, name, err)
	}
	if !ok {
		return nil, false, nil
	}
	aead, err := db.cipher(false)
	if err != nil {
		return nil, false, fmt.Errorf("state: read secret exports %s/%s: %w", namespace, name, err)
	}
	plain, err := open(aead, rec.Sealed, key)
	if err != nil {
		return nil, false, fmt.Errorf("state: read secret exports %s/%s: %w", namespace, name, err)
	}
	defer clear(plain)
	var m map[string]string
	if err := json.Unmarshal(plain, &m); err != nil {
		return nil, false, fmt.Errorf("state: decode secret exports %s/%s: %w", namespace, name, err)
	}
	return m, true, nil
}

// checkKey verifies at Open that the configured key opens the stored key
// check, when secrets were ever sealed, so a wrong key fails early.
func (db *DB) checkKey() error {
	var check []byte
	if err := db.view(func(tx *bolt.Tx) error {
		check = bytes.Clone(tx.Bucket(bucketMeta).Get(metaKeyCheck))
		return nil
	}); err != nil {
		return err
	}
	if check == nil {
		return nil
	}
	aead, err := db.cipher(false)
	if err != nil {
		if errors.Is(err, ErrNoKey) {
			return nil // secrets unreadable, but everything else works; reported on use
		}
		return err
	}
	return verifyKey(aead, check)
}

func verifyKey(aead cipher.AEAD, check []byte) error {
	p, err := open(aead, check, metaKeyCheck)
	if err != nil || !bytes.Equal(p, keyCheckPlain) {
		return ErrKeyMismatch
	}
	return nil
}

// cipher returns the AEAD for secret exports, loading (and when create is
// true, creating) the key file on first use.
func (db *DB) cipher(create bool) (cipher.AEAD, error) {
	db.keyMu.Lock()
	defer db.keyMu.Unlock()
	if db.key == nil {
		switch {
		case db.opts.key != nil:
			db.key = db.opts.key
		case db.opts.noKeyFile:
			return nil, ErrNoKey
		default:
			k, err := loadKeyFile(db.opts.keyFile, create)
			if err != nil {
				return nil, err
			}
			db.key = k
		}
	}
	block, err := aes.NewCipher(db.key)
	if err != nil {
		return nil, fmt.Errorf("encryption key: %w", err)
	}
	return cipher.NewGCM(block)
}

// loadKeyFile reads the base64 key in path, creating it (0600, atomically)
// when it does not exist and create is true. A key file readable by group or
// others is refused.
func loadKeyFile(path string, create bool) ([]byte, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if !create {
			return nil, fmt.Errorf("%w: key file %s does not exist", ErrNoKey, path)
		}
		if err := createKeyFile(path); err != nil {
			return nil, err
		}
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read key file: %w", err)
	}
	if runtime.GOOS != "windows" {
		mode, err := fileMode(path)
		if err != nil {
			return nil, fmt.Errorf("stat key file: %w", err)
		}
		if mode&0o077 != 0 {
			return nil, fmt.Errorf("key file %s has mode %04o: it must not be readable by group or others (chmod 600)", path, mode)
		}
	}
	key, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(data)))
	clear(data)
	if err != nil || len(key) != keySize {
		return nil, fmt.Errorf("key file %s: want %d bytes in base64", path, keySize)
	}
	return key, nil
}

// createKeyFile writes a new random key to a temporary file and links it into
// place, so a concurrent creator or a crash never leaves a partial key.
func createKeyFile(path string) error {
	key := make([]byte, keySize)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("generate key: %w", err)
	}
	enc := []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	clear(key)
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("create key file: %w", err)
	}
	if _, err := tmp.Write(enc); err != nil {
		tmp.Close()
		return fmt.Errorf("create key file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("create key file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("create key file: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("create key file: %w", err)
	}
	return nil
}

func seal(aead cipher.AEAD, plain, aad []byte) ([]byte, error) {
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	return aead.Seal(nonce, nonce, plain, aad), nil
}

func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	if len(sealed) < aead.NonceSize() {
		return nil, errors.New("sealed value too short")
	}
	p, err := aead.Open(nil, sealed[:aead.NonceSize()], sealed[aead.NonceSize():], aad)
	if err != nil {
		return nil, fmt.Errorf("%w (or the stored value is corrupt)", ErrKeyMismatch)
	}
	return p, nil
}
