package azure

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"sigs.k8s.io/yaml"
)

// NamespaceSecretName is the Secret that sets a namespace's credential.
const NamespaceSecretName = "aso-credential"

// CredentialFromAnnotation names a per-resource credential Secret in the
// resource's own namespace.
const CredentialFromAnnotation = "serviceoperator.azure.com/credential-from"

// ErrSecretNotFound is returned (wrapped) by Scoper.Select when a resource's
// credential-from annotation names a Secret that no lookup holds.
var ErrSecretNotFound = errors.New("credential secret not found")

// SecretLookup returns the string data of the Secret namespace/name, with
// found=false when it does not hold that Secret.
type SecretLookup func(namespace, name string) (data map[string]string, found bool, err error)

// MapSecrets is a SecretLookup over an in-memory map keyed "namespace/name",
// e.g. the Secrets of a Git snapshot decoded with SecretData.
func MapSecrets(m map[string]map[string]string) SecretLookup {
	return func(namespace, name string) (map[string]string, bool, error) {
		d, ok := m[namespace+"/"+name]
		return d, ok, nil
	}
}

// DirSecrets is a SecretLookup over a local credentials directory, so that
// secret material need not live in Git. The Secret namespace/name is read from
// the first of <dir>/<namespace>/<name>.env, .yaml, .yml and .json:
//
//   - .env: KEY=VALUE lines ("export " prefix, # comments, blank lines and
//     single or double quotes around a value allowed);
//   - .yaml/.yml/.json: either a flat map of keys to strings, or a Kubernetes
//     Secret manifest (stringData, and base64 data).
//
// Files are read on every call, so edits apply on the next reconcile.
func DirSecrets(dir string) SecretLookup {
	return func(namespace, name string) (map[string]string, bool, error) {
		if !validPathSegment(namespace) || !validPathSegment(name) {
			return nil, false, nil
		}
		for _, ext := range []string{".env", ".yaml", ".yml", ".json"} {
			p := filepath.Join(dir, namespace, name+ext)
			data, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, false, fmt.Errorf("reading credentials file: %w", err)
			}
			var m map[string]string
			if ext == ".env" {
				m, err = parseEnvFile(data)
			} else {
				m, err = parseSecretYAML(data)
			}
			if err != nil {
				return nil, false, fmt.Errorf("credentials file %s: %w", p, err)
			}
			return m, true, nil
		}
		return nil, false, nil
	}
}

func validPathSegment(s string) bool {
	return s != "" && s != "." && s != ".." && !strings.ContainsAny(s, `/\`)
}

func parseEnvFile(data []byte) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		s = strings.TrimPrefix(s, "export ")
		k, v, ok := strings.Cut(s, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("line %d: expected KEY=VALUE", line)
		}
		v = strings.TrimSpace(v)
		if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
			u, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("line %d: bad double-quoted value for %s", line, k)
			}
			v = u
		} else if len(v) >= 2 && v[0] == '\'' && v[len(v)-1] == '\'' {
			v = v[1 : len(v)-1]
		}
		m[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

func parseSecretYAML(data []byte) (map[string]string, error) {
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		// The YAML error may quote the offending line, which could be secret: say only where.
		return nil, errors.New("not a YAML/JSON map of strings or a Kubernetes Secret")
	}
	if kind, _ := raw["kind"].(string); kind == "Secret" {
		return SecretData(raw)
	}
	m := make(map[string]string, len(raw))
	for k, v := range raw {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("value of %s is not a string", k)
		}
		m[k] = s
	}
	return m, nil
}

// SecretData returns the string data of a Kubernetes Secret object: data
// (base64) overlaid by stringData, as the API server merges them.
func SecretData(secret map[string]any) (map[string]string, error) {
	out := map[string]string{}
	if d, ok := secret["data"].(map[string]any); ok {
		for k, v := range d {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("secret data %s is not a string", k)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("secret data %s is not base64", k)
			}
			out[k] = string(b)
		}
	}
	if d, ok := secret["stringData"].(map[string]any); ok {
		for k, v := range d {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("secret stringData %s is not a string", k)
			}
			out[k] = s
		}
	}
	return out, nil
}

// Scoper chooses the credential for a resource the way ASO does: the Secret
// named by the resource's serviceoperator.azure.com/credential-from annotation
// (same namespace only), else the namespace's aso-credential Secret, else the
// global credential. Secrets are looked up in Secrets, in order; the first
// lookup holding a Secret wins (e.g. the repository's Secrets, then a local
// credentials directory). Credentials are cached by Secret content.
type Scoper struct {
	Global  *Credential // may be nil: then every namespace needs its own credential
	Secrets []SecretLookup

	mu    sync.Mutex
	cache map[string]*Credential
}

// Select returns the credential for a resource in namespace with annotations.
func (s *Scoper) Select(namespace string, annotations map[string]string) (*Credential, error) {
	if name, ok := annotations[CredentialFromAnnotation]; ok {
		name = strings.TrimSpace(name)
		if name == "" || strings.Contains(name, "/") {
			return nil, fmt.Errorf("%w: %s %q must name a Secret in the resource's own namespace %s",
				ErrSecretNotFound, CredentialFromAnnotation, name, namespace)
		}
		c, found, err := s.fromSecret(namespace, name)
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, fmt.Errorf("%w: %s/%s (named by %s)", ErrSecretNotFound, namespace, name, CredentialFromAnnotation)
		}
		return c, nil
	}
	c, found, err := s.fromSecret(namespace, NamespaceSecretName)
	if err != nil || found {
		return c, err
	}
	if s.Global == nil {
		return nil, fmt.Errorf("%w: no global credential, no %s/%s Secret and no %s annotation",
			ErrNoCredential, namespace, NamespaceSecretName, CredentialFromAnnotation)
	}
	return s.Global, nil
}

func (s *Scoper) fromSecret(namespace, name string) (*Credential, bool, error) {
	source := namespace + "/" + name
	for _, lookup := range s.Secrets {
		data, found, err := lookup(namespace, name)
		if err != nil {
			return nil, false, fmt.Errorf("looking up credential secret %s: %w", source, err)
		}
		if !found {
			continue
		}
		key := source + "\x00" + dataDigest(data)
		s.mu.Lock()
		c, ok := s.cache[key]
		s.mu.Unlock()
		if ok {
			return c, true, nil
		}
		c, err = CredentialFromSecret(source, data)
		if err != nil {
			return nil, false, err
		}
		s.mu.Lock()
		if s.cache == nil {
			s.cache = map[string]*Credential{}
		}
		s.cache[key] = c
		s.mu.Unlock()
		return c, true, nil
	}
	return nil, false, nil
}

func dataDigest(data map[string]string) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{0})
		h.Write([]byte(data[k]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
