package aso

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"gopkg.in/yaml.v3"
)

// sharedDir finds ../shared (the facts and conformance data) or skips.
func sharedDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv("GITASO_SHARED"); d != "" {
		if _, err := os.Stat(d); err != nil {
			t.Skipf("GITASO_SHARED=%s is not readable (%v): skipping the ASO conformance test", d, err)
		}
		return d
	}
	d := filepath.Join("..", "..", "shared") // repo root is .. from aso
	if _, err := os.Stat(filepath.Join(d, "conformance", "aso")); err != nil {
		t.Skipf("%s is absent: skipping the ASO conformance test (set GITASO_SHARED to the shared directory to run it)", d)
	}
	return d
}

// parseYAML reads multi-document YAML into JSON-compatible values with
// integers as int64 and other numbers as float64, as package source does.
func parseYAML(data []byte) ([]map[string]any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []map[string]any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if v == nil {
			continue
		}
		n, err := normalize(v)
		if err != nil {
			return nil, err
		}
		m, ok := n.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("document is %T, not an object", n)
		}
		out = append(out, m)
	}
}

func normalize(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[k] = n
		}
		return x, nil
	case map[any]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("non-string key %v", k)
			}
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			m[ks] = n
		}
		return m, nil
	case []any:
		for i, e := range x {
			n, err := normalize(e)
			if err != nil {
				return nil, err
			}
			x[i] = n
		}
		return x, nil
	case int:
		return int64(x), nil
	case uint64:
		return float64(x), nil
	case float32:
		return float64(x), nil
	}
	return v, nil
}

// obj is a parsed manifest.
type obj struct {
	file             string
	apiVersion, kind string
	name, namespace  string
	spec             map[string]any
	k                *Kind
}

func newTestObj(file string, m map[string]any) (*obj, error) {
	o := &obj{file: file}
	o.apiVersion, _ = m["apiVersion"].(string)
	o.kind, _ = m["kind"].(string)
	md, _ := m["metadata"].(map[string]any)
	o.name, _ = md["name"].(string)
	o.namespace, _ = md["namespace"].(string)
	if o.namespace == "" {
		o.namespace = "default"
	}
	o.spec, _ = m["spec"].(map[string]any)
	if o.spec == nil {
		o.spec = map[string]any{}
	}
	k, ok := LookupAPIVersion(o.apiVersion, o.kind)
	if !ok {
		return nil, fmt.Errorf("%s: unknown kind %s %s", file, o.apiVersion, o.kind)
	}
	o.k = k
	return o, nil
}
