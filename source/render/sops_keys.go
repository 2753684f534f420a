package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"filippo.io/age"
	"filippo.io/age/armor"
	"github.com/ProtonMail/go-crypto/openpgp"
	pgparmor "github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"

	"github.com/gitaso/gitaso/internal/diag"
)

// ErrSOPSNoKey is wrapped by the error for a SOPS-encrypted document whose
// data key none of the keys given to gitaso opens (age identities, PGP keys,
// Azure Key Vault through gitaso's credential). A document encrypted for
// age recipients only wraps ErrSOPSNoIdentity instead.
var ErrSOPSNoKey = errors.New("no key given to gitaso opens this SOPS file")

// sopsKeyGroup is one key group of a sops stanza (or the stanza's top-level
// keys): the data key encrypted for each master key.
type sopsKeyGroup struct {
	Age  []sopsAgeKey  `yaml:"age"`
	PGP  []sopsPGPKey  `yaml:"pgp"`
	AzKV []sopsAzKVKey `yaml:"azure_kv"`
	// Other key types, only to say why gitaso cannot decrypt.
	KMS   []any `yaml:"kms"`
	GCP   []any `yaml:"gcp_kms"`
	Vault []any `yaml:"hc_vault"`
	HCKMS []any `yaml:"hckms"`
}

type sopsPGPKey struct {
	Fingerprint string `yaml:"fp"`
	Enc         string `yaml:"enc"`
}

type sopsAzKVKey struct {
	VaultURL string `yaml:"vault_url"`
	Name     string `yaml:"name"`
	Version  string `yaml:"version"`
	Enc      string `yaml:"enc"`
}

// String names the key as SOPS does: {vaultUrl}/keys/{name}/{version}.
func (k sopsAzKVKey) String() string {
	return strings.TrimRight(k.VaultURL, "/") + "/keys/" + k.Name + "/" + k.Version
}

// sopsKeys are the keys gitaso was given.
type sopsKeys struct {
	age []age.Identity
	pgp openpgp.EntityList
	kv  SOPSKeyVault
}

func (r *Renderer) sopsKeys() *sopsKeys {
	return &sopsKeys{age: r.opts.AgeIdentities, pgp: r.opts.PGPKeys, kv: r.opts.KeyVault}
}

// given says which keys gitaso holds, for errors.
func (k *sopsKeys) given() string {
	var parts []string
	if len(k.age) > 0 {
		parts = append(parts, fmt.Sprintf("%d age identities", len(k.age)))
	}
	if len(k.pgp) > 0 {
		var fps []string
		for _, e := range k.pgp {
			if e.PrivateKey != nil {
				fps = append(fps, pgpFingerprint(e.PrimaryKey.Fingerprint))
			}
		}
		parts = append(parts, "PGP keys "+strings.Join(fps, ", "))
	}
	if k.kv != nil {
		parts = append(parts, "Azure Key Vault (gitaso's Azure credential)")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

func pgpFingerprint(fp []byte) string { return strings.ToUpper(fmt.Sprintf("%x", fp)) }

// sopsDataKey opens the data key with the first of the file's master keys
// that a key gitaso holds opens: age and PGP first (local), then Azure Key
// Vault (a request). Errors name the file's key types and gitaso's keys,
// never a key or a value.
func sopsDataKey(ctx context.Context, meta *sopsMeta, keys *sopsKeys) ([]byte, *diag.Error) {
	if len(meta.KeyGroups) > 1 {
		return nil, &diag.Error{Field: "sops.key_groups", Msg: "SOPS files with several key groups (Shamir secret sharing) are not supported by gitaso"}
	}
	all := meta.sopsKeyGroup
	for _, g := range meta.KeyGroups {
		all.Age = append(all.Age, g.Age...)
		all.PGP = append(all.PGP, g.PGP...)
		all.AzKV = append(all.AzKV, g.AzKV...)
		all.KMS = append(all.KMS, g.KMS...)
		all.GCP = append(all.GCP, g.GCP...)
		all.Vault = append(all.Vault, g.Vault...)
		all.HCKMS = append(all.HCKMS, g.HCKMS...)
	}
	var has []string // the file's key types gitaso can use
	for name, l := range map[string]int{"age": len(all.Age), "pgp": len(all.PGP), "azure_kv": len(all.AzKV)} {
		if l > 0 {
			has = append(has, name)
		}
	}
	var other []string
	for name, l := range map[string]int{"kms": len(all.KMS), "gcp_kms": len(all.GCP), "hc_vault": len(all.Vault), "hckms": len(all.HCKMS)} {
		if l > 0 {
			other = append(other, name)
		}
	}
	slices.Sort(has)
	slices.Sort(other)
	if len(has) == 0 {
		return nil, &diag.Error{Field: "sops", Msg: fmt.Sprintf("SOPS file has no age, PGP or Azure Key Vault key (key types: %s); gitaso decrypts those three only", strings.Join(other, ", "))}
	}
	recipients := make([]string, len(all.Age))
	for i, k := range all.Age {
		recipients[i] = k.Recipient
	}
	ageOnly := len(has) == 1 && has[0] == "age"
	if ageOnly && len(keys.age) == 0 {
		return nil, &diag.Error{Field: "sops", Msg: fmt.Sprintf("SOPS-encrypted, but no age identity is configured: give its key with --sops-age-key-file or SOPS_AGE_KEY_FILE (recipients: %s)", strings.Join(recipients, ", "))}
	}

	var errs []error
	if len(keys.age) > 0 {
		for _, k := range all.Age {
			b, err := ageDataKey(k, keys.age)
			if err != nil {
				var nm *age.NoIdentityMatchError
				if !errors.As(err, &nm) {
					errs = append(errs, fmt.Errorf("age recipient %s: %w", k.Recipient, err))
				}
				continue
			}
			return b, nil
		}
	}
	if len(keys.pgp) > 0 {
		for _, k := range all.PGP {
			b, err := pgpDataKey(k, keys.pgp)
			if err != nil {
				if !errors.Is(err, errPGPNoKey) {
					errs = append(errs, fmt.Errorf("PGP key %s: %w", k.Fingerprint, err))
				}
				continue
			}
			return b, nil
		}
	}
	if keys.kv != nil {
		for _, k := range all.AzKV {
			b, err := azkvDataKey(ctx, k, keys.kv)
			if err != nil {
				errs = append(errs, fmt.Errorf("data key from Azure Key Vault key %s: %w", k, err))
				continue
			}
			return b, nil
		}
	}
	if ageOnly && len(errs) == 0 {
		return nil, &diag.Error{Field: "sops.age", Err: fmt.Errorf("%w (recipients: %s)", ErrSOPSNoIdentity, strings.Join(recipients, ", "))}
	}
	var fileKeys []string
	if len(all.Age) > 0 {
		fileKeys = append(fileKeys, "age "+strings.Join(recipients, ", "))
	}
	if len(all.PGP) > 0 {
		fps := make([]string, len(all.PGP))
		for i, k := range all.PGP {
			fps[i] = k.Fingerprint
		}
		fileKeys = append(fileKeys, "pgp "+strings.Join(fps, ", "))
	}
	if len(all.AzKV) > 0 {
		names := make([]string, len(all.AzKV))
		for i, k := range all.AzKV {
			names[i] = k.String()
		}
		fileKeys = append(fileKeys, "azure_kv "+strings.Join(names, ", "))
	}
	if len(other) > 0 {
		fileKeys = append(fileKeys, strings.Join(other, ", ")+" (not supported by gitaso)")
	}
	err := fmt.Errorf("%w (the file's keys: %s; gitaso's keys: %s)", ErrSOPSNoKey, strings.Join(fileKeys, "; "), keys.given())
	if len(errs) > 0 {
		err = fmt.Errorf("%w: %w", err, errors.Join(errs...))
	}
	return nil, &diag.Error{Field: "sops", Msg: "cannot open the SOPS data key", Err: err}
}

// ageDataKey opens an age stanza; an *age.NoIdentityMatchError means none of
// ids is its recipient.
func ageDataKey(k sopsAgeKey, ids []age.Identity) ([]byte, error) {
	r, err := age.Decrypt(armor.NewReader(strings.NewReader(k.Enc)), ids...)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(r); err != nil {
		return nil, err
	}
	return checkDataKey(b.Bytes())
}

func checkDataKey(b []byte) ([]byte, error) {
	if len(b) != 32 {
		return nil, fmt.Errorf("data key of %d bytes, want 32", len(b))
	}
	return b, nil
}

// errPGPNoKey: none of the keys given is the message's recipient.
var errPGPNoKey = errors.New("no PGP key given to gitaso is a recipient")

// pgpDataKey opens a PGP stanza (an armored OpenPGP message) with the
// keyring, in process (no gpg binary, no agent).
func pgpDataKey(k sopsPGPKey, ring openpgp.EntityList) ([]byte, error) {
	block, err := pgparmor.Decode(strings.NewReader(k.Enc))
	if err != nil {
		return nil, fmt.Errorf("not an armored OpenPGP message: %w", err)
	}
	prompted := false
	md, err := openpgp.ReadMessage(block.Body, ring, func([]openpgp.Key, bool) ([]byte, error) {
		// A passphrase-protected key: gitaso has no passphrase to give.
		prompted = true
		return nil, errors.New("the PGP private key is protected by a passphrase; give gitaso an unprotected key (as Flux's sops-gpg Secret holds)")
	}, nil)
	if err != nil {
		if prompted {
			return nil, errors.New("the PGP private key is protected by a passphrase; give gitaso an unprotected key (as Flux's sops-gpg Secret holds)")
		}
		if errors.Is(err, pgperrors.ErrKeyIncorrect) {
			return nil, errPGPNoKey
		}
		return nil, fmt.Errorf("OpenPGP: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(md.UnverifiedBody, 1024))
	if err != nil {
		return nil, fmt.Errorf("OpenPGP: %w", err)
	}
	return checkDataKey(b)
}

// azkvDataKey opens an Azure Key Vault stanza: enc is the data key
// encrypted with RSA-OAEP-256 by the vault's key, base64url without padding.
func azkvDataKey(ctx context.Context, k sopsAzKVKey, kv SOPSKeyVault) ([]byte, error) {
	if k.VaultURL == "" || k.Name == "" {
		return nil, errors.New("vault_url and name are required")
	}
	b, err := kv.Decrypt(ctx, AzureKeyVaultKey{VaultURL: k.VaultURL, Name: k.Name, Version: k.Version}, k.Enc)
	if err != nil {
		return nil, err
	}
	return checkDataKey(b)
}

// ParsePGPKeys reads OpenPGP keys, armored (*.asc, gpg --export-secret-keys
// --armor) or binary, several armored blocks one after the other allowed.
// Only keys with their private part can decrypt; public keys are kept but
// unused.
func ParsePGPKeys(data []byte) (openpgp.EntityList, error) {
	trimmed := bytes.TrimSpace(data)
	if !bytes.HasPrefix(trimmed, []byte("-----BEGIN PGP")) {
		l, err := openpgp.ReadKeyRing(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("parse PGP keys: %w", err)
		}
		return l, nil
	}
	var out openpgp.EntityList
	rest := data
	for {
		i := bytes.Index(rest, []byte("-----BEGIN PGP"))
		if i < 0 {
			break
		}
		rest = rest[i:]
		end := bytes.Index(rest, []byte("-----END PGP"))
		if end < 0 {
			return nil, errors.New("parse PGP keys: armored block without END line")
		}
		nl := bytes.IndexByte(rest[end:], '\n')
		if nl < 0 {
			nl = len(rest) - end
		}
		l, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(rest[:end+nl]))
		if err != nil {
			return nil, fmt.Errorf("parse PGP keys: %w", err)
		}
		out = append(out, l...)
		rest = rest[end+nl:]
	}
	if len(out) == 0 {
		return nil, errors.New("parse PGP keys: no key found")
	}
	return out, nil
}

// LoadPGPKeys reads the PGP keys of a file, or of every *.asc, *.gpg and
// *.pgp file of a directory (Flux's sops-gpg Secret mounted as a volume holds
// one *.asc file per key).
func LoadPGPKeys(path string) (openpgp.EntityList, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read PGP keys: %w", err)
	}
	files := []string{path}
	if st.IsDir() {
		files = nil
		ents, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("read PGP keys: %w", err)
		}
		for _, e := range ents {
			switch filepath.Ext(e.Name()) {
			case ".asc", ".gpg", ".pgp":
				if !e.IsDir() {
					files = append(files, filepath.Join(path, e.Name()))
				}
			}
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("read PGP keys: %s holds no *.asc, *.gpg or *.pgp file", path)
		}
	}
	var out openpgp.EntityList
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("read PGP keys: %w", err)
		}
		l, err := ParsePGPKeys(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out = append(out, l...)
	}
	return out, nil
}
