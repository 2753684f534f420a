package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// Values from Secrets placed by substitution.
//
// A value substitution took from a Secret (manifest.SecretValue) is secret
// wherever it lands. The planner finds, after the conversion, every field of
// the request body that holds one (the whole field, even when the value is
// a part of it) and treats it as it treats a write-only value read from a
// secretRef: the request body, the changes and the state's applied body
// show it masked, and a change is found by the hash of the whole request
// (Resource.Hash, record.Resource.AppliedHash), which covers the real
// value. What is shown instead is manifest.SecretLabel: "(sensitive value
// from Secret namespace/name)"; Resource.Sensitive says which fields, and
// from which Secret. The manifest and the config map values the plan
// carries (Manifest, Inputs.ConfigMaps) are masked the same way in its JSON
// form; the plan in memory keeps the real ones for the executor, whose PUT
// carries the real value.

// ErrMaskedSecrets is returned by Resolve for a resource read back from a
// plan's JSON form whose manifest holds values from Secrets: that form
// masks them (Resource.SecretSources), so the request cannot be built from
// it. Plan again: the values are read again from their Secrets.
var ErrMaskedSecrets = errors.New("the plan's JSON form masks values from Secrets")

// secretSide is what a planned resource keeps beside its JSON form when
// values from Secrets were placed in it: the real manifest and config map
// values (the JSON form masks them) and the values themselves.
type secretSide struct {
	values     []manifest.SecretValue
	manifest   map[string]any
	configMaps map[string]string
}

// Object returns the resource's manifest as rendered, values from Secrets
// included: the one to build requests from. Manifest is the same but for a
// resource holding values from Secrets, whose Manifest masks them.
func (r *Resource) Object() map[string]any {
	if r.secret != nil {
		return r.secret.manifest
	}
	return r.Manifest
}

// setSecrets records the values from Secrets the resource holds (in its
// manifest or in the config map values it reads) and masks them in its JSON
// form: Manifest, Inputs.ConfigMaps and SecretSources.
func (r *Resource) setSecrets(values []manifest.SecretValue) {
	if len(values) == 0 {
		return
	}
	side := &secretSide{values: values, manifest: r.Manifest}
	if m, ok := manifest.Mask(r.Manifest, values); ok {
		r.Manifest, _ = m.(map[string]any)
	}
	if r.Inputs != nil && len(r.Inputs.ConfigMaps) > 0 {
		side.configMaps = r.Inputs.ConfigMaps
		masked := make(map[string]string, len(r.Inputs.ConfigMaps))
		for k, v := range r.Inputs.ConfigMaps {
			if s, ok := manifest.SecretIn(v, values); ok {
				v = s.String()
			}
			masked[k] = v
		}
		in := *r.Inputs
		in.ConfigMaps = masked
		r.Inputs = &in
	}
	r.secret = side
	r.SecretSources = nil
	for _, v := range values {
		if !slices.Contains(r.SecretSources, v.From) {
			r.SecretSources = append(r.SecretSources, v.From)
		}
	}
	slices.Sort(r.SecretSources)
}

// secretValues returns the values from Secrets the resource holds.
func (r *Resource) secretValues() []manifest.SecretValue {
	if r.secret == nil {
		return nil
	}
	return r.secret.values
}

// markSecrets adds to body.Secrets every field of the body that holds one of
// values (not already there, nor known after apply) and returns them, JSON
// pointer → the Secret it came from; nil when there is none.
func markSecrets(body *aso.Body, values []manifest.SecretValue) (map[string]string, error) {
	if len(values) == 0 {
		return nil, nil
	}
	doc, err := decode(body.JSON)
	if err != nil {
		return nil, fmt.Errorf("decode body: %w", err)
	}
	var out map[string]string
	var walk func(v any, path string)
	walk = func(v any, path string) {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				walk(e, path+"/"+escapePointer(k))
			}
			return
		case []any:
			for i, e := range t {
				walk(e, path+"/"+strconv.Itoa(i))
			}
			return
		}
		s, ok := manifest.SecretIn(v, values)
		if !ok || slices.Contains(body.Unknown, path) {
			return
		}
		if out == nil {
			out = map[string]string{}
		}
		out[path] = s.From
		if !slices.Contains(body.Secrets, path) {
			body.Secrets = append(body.Secrets, path)
		}
	}
	walk(doc, "")
	if out != nil {
		slices.Sort(body.Secrets)
	}
	return out, nil
}

// redactLabeled is redact with the label of each field of sensitive (from
// a Secret named there) instead of Redacted.
func redactLabeled(body []byte, secrets []string, sensitive map[string]string) (json.RawMessage, error) {
	if len(sensitive) == 0 {
		return redact(body, secrets)
	}
	doc, err := decode(body)
	if err != nil {
		return nil, err
	}
	for _, p := range secrets {
		label := Redacted
		if from, ok := sensitive[p]; ok {
			label = manifest.SecretLabel(from)
		}
		setPointer(doc, p, label)
	}
	return json.Marshal(doc)
}

// Redact returns body with the JSON pointers of secrets replaced by what
// the plan shows for them: the label of the Secret a substituted value came
// from (Sensitive), else Redacted. The executor records what it sent this
// way (record.Resource.AppliedBody).
func (r *Resource) Redact(body []byte, secrets []string) (json.RawMessage, error) {
	return redactLabeled(body, secrets, r.Sensitive)
}

// sensitiveDrift compares the fields holding values from Secrets with what
// Azure holds (observed), without showing either: a field that differs is
// a masked change. The other secret fields (write-only values) are not
// compared: ARM does not return them.
func sensitiveDrift(observed any, body []byte, sensitive map[string]string, out *[]Change) {
	if len(sensitive) == 0 || observed == nil {
		return
	}
	desired, err := decode(body)
	if err != nil {
		return
	}
	paths := make([]string, 0, len(sensitive))
	for p := range sensitive {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		want, ok := atPointer(desired, p)
		if !ok {
			continue
		}
		have, found := atPointer(observed, p)
		var cs []Change
		if found {
			diffSubset(have, want, p, nil, &cs)
		}
		if !found || len(cs) > 0 {
			*out = append(*out, Change{Path: p, Op: "replace", Sensitive: true})
		}
	}
}

// atPointer returns the value at a JSON pointer of doc.
func atPointer(doc any, p string) (any, bool) {
	cur := doc
	for _, t := range splitPointer(p) {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[t]
			if !ok {
				return nil, false
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			cur = c[i]
		default:
			return nil, false
		}
	}
	return cur, true
}

// scrubSecrets replaces the values from Secrets in an error's text by their
// labels (a conversion error may quote a field's value). A *diag.Error stays
// one, with its file, object and field; the causes it wraps still answer
// errors.Is.
func scrubSecrets(err error, values []manifest.SecretValue) error {
	if err == nil || len(values) == 0 {
		return err
	}
	scrub := func(s string) string {
		for _, v := range values {
			if v.Value() != "" {
				s = strings.ReplaceAll(s, v.Value(), v.String())
			}
		}
		return s
	}
	wrap := func(e error) error {
		if e == nil {
			return nil
		}
		if msg := scrub(e.Error()); msg != e.Error() {
			return &scrubbedError{msg: msg, err: e}
		}
		return e
	}
	var de *diag.Error
	if errors.As(err, &de) {
		c := *de
		c.Msg, c.Err = scrub(c.Msg), wrap(c.Err)
		return &c
	}
	return wrap(err)
}

// scrubbedError is an error whose text had values from Secrets replaced.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }

// Unwrap returns the original error (for errors.Is); its text holds the
// value, so it is never printed.
func (e *scrubbedError) Unwrap() error { return e.err }

// appendSecretValues adds the values of add that dst does not hold yet.
func appendSecretValues(dst []manifest.SecretValue, add ...manifest.SecretValue) []manifest.SecretValue {
	for _, a := range add {
		if !slices.Contains(dst, a) {
			dst = append(slices.Clip(dst), a)
		}
	}
	return dst
}

// MaskRecorded returns a recorded body (record.Resource.AppliedBody) with
// the fields of sensitive (Resource.Sensitive) masked, and whether it
// changed anything: a body recorded before gitaso masked values
// substituted from Secrets shows them no more.
func MaskRecorded(body json.RawMessage, sensitive map[string]string) (json.RawMessage, bool) {
	if len(body) == 0 || len(sensitive) == 0 {
		return body, false
	}
	doc, err := decode(body)
	if err != nil {
		return body, false
	}
	changed := false
	for p, from := range sensitive {
		v, ok := atPointer(doc, p)
		if !ok {
			continue
		}
		if s, isString := v.(string); isString && manifest.IsSecretLabel(s) {
			continue
		}
		setPointer(doc, p, manifest.SecretLabel(from))
		changed = true
	}
	if !changed {
		return body, false
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return body, false
	}
	return b, true
}

// scrubList scrubs (scrubSecrets) the errors about objects holding values
// from Secrets: an error may quote a field's value.
func scrubList(errs diag.List, objs []manifest.Object) diag.List {
	var byID map[string][]manifest.SecretValue
	for _, o := range objs {
		if len(o.Secrets) > 0 {
			if byID == nil {
				byID = map[string][]manifest.SecretValue{}
			}
			byID[o.ID()] = appendSecretValues(byID[o.ID()], o.Secrets...)
		}
	}
	if byID == nil {
		return errs
	}
	for i, e := range errs {
		if vs := byID[e.Object]; vs != nil {
			if de, ok := scrubSecrets(e, vs).(*diag.Error); ok {
				errs[i] = de
			}
		}
	}
	return errs
}

// SecretHashes returns the sha256 of each field of sensitive in body (the
// real body), JSON pointer → hex digest over the pointer and the value: the
// state keeps them (record.Resource.SecretHashes) so that a plan tells
// which field from a Secret changed without keeping the value. The digest
// of a short value can be guessed by trying values, as the whole request's
// hash (AppliedHash) can: the state file is to be protected like the
// Secrets. Nil when sensitive is empty.
func SecretHashes(body []byte, sensitive map[string]string) map[string]string {
	if len(sensitive) == 0 {
		return nil
	}
	doc, err := decode(body)
	if err != nil {
		return nil
	}
	out := make(map[string]string, len(sensitive))
	for p := range sensitive {
		v, ok := atPointer(doc, p)
		if !ok {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			continue
		}
		h := sha256.New()
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write(b)
		out[p] = hex.EncodeToString(h.Sum(nil))
	}
	return out
}
