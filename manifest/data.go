package manifest

import (
	"encoding/base64"
	"fmt"
	"maps"
	"slices"

	"github.com/gitaso/gitaso/internal/diag"
)

// SecretData returns the values of a v1 Secret: data (base64-decoded) with
// stringData merged over it, as the Kubernetes API server does. Errors name
// the offending key and are *diag.Error values.
func SecretData(o Object) (map[string]string, error) {
	out := map[string]string{}
	var errs diag.List
	errs = append(errs, eachString(o, "data", func(k, v string) {
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			errs = append(errs, fieldError(o, "data."+k, "invalid base64 (use stringData for plain text)"))
			return
		}
		out[k] = string(b)
	})...)
	errs = append(errs, eachString(o, "stringData", func(k, v string) { out[k] = v })...)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// ConfigMapData returns the values of a v1 ConfigMap: data, plus binaryData
// (base64-decoded). A key in both is an error, as in Kubernetes.
func ConfigMapData(o Object) (map[string]string, error) {
	out := map[string]string{}
	var errs diag.List
	errs = append(errs, eachString(o, "data", func(k, v string) { out[k] = v })...)
	errs = append(errs, eachString(o, "binaryData", func(k, v string) {
		if _, dup := out[k]; dup {
			errs = append(errs, fieldError(o, "binaryData."+k, "key is also in data"))
			return
		}
		b, err := base64.StdEncoding.DecodeString(v)
		if err != nil {
			errs = append(errs, fieldError(o, "binaryData."+k, "invalid base64"))
			return
		}
		out[k] = string(b)
	})...)
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// eachString calls fn for every key of the mapping at field, in key order,
// and fails when the field is not a mapping of strings. Values must be strings
// (the API server refuses numbers there: quote them).
func eachString(o Object, field string, fn func(k, v string)) diag.List {
	raw, ok := o.Content[field]
	if !ok || raw == nil {
		return nil
	}
	m, ok := raw.(map[string]any)
	if !ok {
		return diag.List{fieldError(o, field, fmt.Sprintf("must be a mapping, got %s", TypeName(raw)))}
	}
	var errs diag.List
	for _, k := range sortedKeys(m) {
		s, ok := m[k].(string)
		if !ok {
			errs = append(errs, fieldError(o, field+"."+k, fmt.Sprintf("must be a string, got %s (quote it)", TypeName(m[k]))))
			continue
		}
		fn(k, s)
	}
	return errs
}

func fieldError(o Object, field, msg string) *diag.Error {
	return &diag.Error{File: o.File, Line: o.Line, Object: o.ID(), Field: field, Msg: msg}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// TypeName names the JSON type of a parsed value for error messages ("a
// mapping", "a list", "a string", "a boolean", "a number", "null").
func TypeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int64, float64:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
