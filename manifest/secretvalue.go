package manifest

import (
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
)

// Values that came from a Secret.
//
// Flux post-build substitution can place a Secret's value anywhere in an
// object (--substitute-from Secret/…, a Kustomization's substituteFrom
// naming a Secret of the repository, a SOPS-decrypted one, one read from
// the cluster or exported by a resource). Such a value stays secret wherever
// it lands: the renderer records it with the object (Object.Secrets), and
// everything that shows or stores the object masks every field holding it
// (see SecretLabel), the whole field even when the value is only part of
// it ("prefix-${TOKEN}-suffix"). Only the request sent to Azure carries it.

// SecretValue is a value a renderer took from a Secret, with where it came
// from. The value is unexported and never printed: String, LogValue and
// MarshalJSON give the source only.
type SecretValue struct {
	value string
	// From names the Secret: "Secret namespace/name".
	From string
}

// NewSecretValue records value as coming from from ("Secret namespace/name").
func NewSecretValue(value, from string) SecretValue { return SecretValue{value: value, From: from} }

// Value returns the secret value itself: for the request to Azure and for
// finding where it landed, never for display.
func (s SecretValue) Value() string { return s.value }

// String returns the label shown instead of the value.
func (s SecretValue) String() string { return SecretLabel(s.From) }

// LogValue logs the source only.
func (s SecretValue) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON writes the source only.
func (s SecretValue) MarshalJSON() ([]byte, error) { return json.Marshal(s.From) }

// SecretLabel is what plans, the API and the state show instead of a value
// from a Secret: "(sensitive value from Secret namespace/name)", or
// "(sensitive value)" when from is empty.
func SecretLabel(from string) string {
	if from == "" {
		return "(sensitive value)"
	}
	return "(sensitive value from " + from + ")"
}

// IsSecretLabel reports whether s is a label SecretLabel makes.
func IsSecretLabel(s string) bool {
	return s == "(sensitive value)" || strings.HasPrefix(s, "(sensitive value from ") && strings.HasSuffix(s, ")")
}

// SecretIn returns the first of secrets that v holds: a string holding the
// value anywhere in it, or a number or boolean whose text is the value (a
// substituted "${PORT}" parsed as an integer). ok is false when v holds
// none (or is a map or a list).
func SecretIn(v any, secrets []SecretValue) (SecretValue, bool) {
	switch x := v.(type) {
	case string:
		for _, s := range secrets {
			if s.value != "" && strings.Contains(x, s.value) {
				return s, true
			}
		}
		return SecretValue{}, false
	case map[string]any, []any, nil:
		return SecretValue{}, false
	}
	text := scalarText(v)
	for _, s := range secrets {
		if s.value != "" && strings.TrimSpace(s.value) == text {
			return s, true
		}
	}
	return SecretValue{}, false
}

func scalarText(v any) string {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case json.Number:
		return x.String()
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// Holds reports whether v (a document: maps, lists, scalars) holds any of
// secrets in a value or a key.
func Holds(v any, secrets []SecretValue) bool {
	if len(secrets) == 0 {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, ok := SecretIn(k, secrets); ok || Holds(e, secrets) {
				return true
			}
		}
		return false
	case []any:
		for _, e := range x {
			if Holds(e, secrets) {
				return true
			}
		}
		return false
	}
	_, ok := SecretIn(v, secrets)
	return ok
}

// Mask returns a copy of v in which every value holding one of secrets is
// replaced by its SecretLabel (the whole value), and whether it replaced
// any. v itself is never changed; parts without a secret are shared.
// A map key holding a secret is kept as it is: keys are names.
func Mask(v any, secrets []SecretValue) (any, bool) {
	if len(secrets) == 0 {
		return v, false
	}
	switch x := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			m, ok := Mask(e, secrets)
			if !ok {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			out[k] = m
		}
		if out == nil {
			return v, false
		}
		return out, true
	case []any:
		var out []any
		for i, e := range x {
			m, ok := Mask(e, secrets)
			if !ok {
				continue
			}
			if out == nil {
				out = append([]any(nil), x...)
			}
			out[i] = m
		}
		if out == nil {
			return v, false
		}
		return out, true
	}
	if s, ok := SecretIn(v, secrets); ok {
		return s.String(), true
	}
	return v, false
}

// Occurring returns the secrets that v holds (see Holds), nil when none.
func Occurring(v any, secrets []SecretValue) []SecretValue {
	var out []SecretValue
	for _, s := range secrets {
		if Holds(v, []SecretValue{s}) {
			out = append(out, s)
		}
	}
	return out
}
