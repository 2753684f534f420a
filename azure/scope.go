package azure

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// SecretLookup returns the string data of the Secret namespace/name, with
// found=false when it does not hold that Secret.
type SecretLookup func(namespace, name string) (data map[string]string, found bool, err error)

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
