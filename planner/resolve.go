package planner

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
)

// Inputs are the values a resource's request reads from outside its own
// manifest, as the plan resolved them. With them, the resource's manifest
// and the values the apply learns (Values), Resolve rebuilds the exact
// request without the graph the plan was made from: a plan read back from
// JSON applies as the plan in memory does.
//
// No secret value is ever in Inputs: Secrets only names the Secret keys the
// request reads (they are looked up again when the plan is applied), so a
// plan can be written, posted and stored.
type Inputs struct {
	// References are the ARM IDs of the resources referred to by name,
	// "group/Kind/name" → ARM ID.
	References map[string]string `json:"references,omitempty"`
	// ConfigMaps are the values of the repository's config maps the request
	// reads, "name/key" → value.
	ConfigMaps map[string]string `json:"configMaps,omitempty"`
	// Secrets are the repository (or credentials directory) Secret keys the
	// request reads: "name/key", or "name" for a whole Secret (a secret map).
	Secrets []string `json:"secrets,omitempty"`
	// Exported are the values that another resource exports (operatorSpec),
	// read from the apply's outputs: known from an earlier apply, or only
	// after the producer is applied in this plan.
	Exported []ExportedInput `json:"exported,omitempty"`
}

// ExportedInput is one config map or secret key a request reads that a
// resource exports.
type ExportedInput struct {
	Secret bool   `json:"secret,omitempty"`
	Name   string `json:"name"`
	Key    string `json:"key"`
	// Producer is the state key of the resource of this plan that exports
	// it; empty when no resource of the plan does (the value comes from an
	// earlier apply).
	Producer string `json:"producer,omitempty"`
}

func (e ExportedInput) what() string {
	if e.Secret {
		return "secret"
	}
	return "config map"
}

// SecretSource gives the values of a Secret that is not an export: the
// repository's Secrets and the local credentials directory. *Graph is one.
type SecretSource interface {
	SecretData(namespace, name string) (map[string]string, bool)
}

// Values are what the apply of a plan knows beyond the plan: the exported
// values (Outputs, growing as producers are applied) and the Secrets.
type Values struct {
	Outputs Outputs
	Secrets SecretSource
}

// ErrNoManifest is returned by Resolve for a resource without a manifest (a
// deletion, or an observed resource).
var ErrNoManifest = errors.New("the planned resource carries no manifest")

// Resolve builds a planned resource's request body from the plan's data and
// the values known now: the result has no unknown values left unless a
// producer failed. It gives the same body as the conversion made while
// planning when the values are the same.
func Resolve(r *Resource, v Values) (*aso.Body, error) {
	if r.Manifest == nil {
		return nil, fmt.Errorf("%s: %w", r.ID(), ErrNoManifest)
	}
	k, ok := aso.Lookup(r.Group, r.Version, r.Kind)
	if !ok {
		return nil, fmt.Errorf("%s: unknown ASO kind %s/%s %s", r.ID(), r.Group, r.Version, r.Kind)
	}
	if len(r.SecretSources) > 0 && r.secret == nil {
		return nil, fmt.Errorf("%s: %w (%s): plan again", r.ID(), ErrMaskedSecrets, strings.Join(r.SecretSources, ", "))
	}
	spec, _ := r.Object()["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	body, err := aso.Convert(k, spec, r.AzureName, &planResolver{r: r, v: v})
	if err != nil {
		return nil, scrubSecrets(err, r.secretValues())
	}
	if _, err := markSecrets(body, r.secretValues()); err != nil {
		return nil, err
	}
	return body, nil
}

// planResolver answers aso.Convert's look-ups from a planned resource's
// Inputs, in the order the graph's resolver uses: repository config maps
// and secrets, then exported values.
type planResolver struct {
	r *Resource
	v Values
}

var _ aso.Resolver = (*planResolver)(nil)

func (p *planResolver) in() *Inputs {
	if p.r.Inputs == nil {
		return &Inputs{}
	}
	return p.r.Inputs
}

func (p *planResolver) ResourceID(group, kind, name string) (string, error) {
	if id, ok := p.in().References[group+"/"+kind+"/"+name]; ok {
		return id, nil
	}
	return "", fmt.Errorf("%s %q not found in namespace %q", kind, name, p.r.Namespace)
}

func (p *planResolver) exported(secret bool, name, key string) (string, error) {
	if v, ok := p.v.Outputs[exportKey(p.r.Namespace, secret, name, key)]; ok {
		return v, nil
	}
	for _, e := range p.in().Exported {
		if e.Secret == secret && e.Name == name && e.Key == key {
			return "", aso.ErrUnknown
		}
	}
	what := "config map"
	if secret {
		what = "secret"
	}
	return "", fmt.Errorf("%s %s/%s not found", what, p.r.Namespace, name)
}

func (p *planResolver) ConfigMap(name, key string) (string, error) {
	if s := p.r.secret; s != nil && s.configMaps != nil {
		if v, ok := s.configMaps[name+"/"+key]; ok {
			return v, nil // the real value: Inputs.ConfigMaps masks it
		}
	}
	if v, ok := p.in().ConfigMaps[name+"/"+key]; ok {
		return v, nil
	}
	return p.exported(false, name, key)
}

func (p *planResolver) repoSecret(name string) (map[string]string, bool) {
	if p.v.Secrets == nil {
		return nil, false
	}
	return p.v.Secrets.SecretData(p.r.Namespace, name)
}

func (p *planResolver) Secret(name, key string) (string, error) {
	if d, ok := p.repoSecret(name); ok {
		v, ok := d[key]
		if !ok {
			return "", fmt.Errorf("secret %s/%s has no key %q", p.r.Namespace, name, key)
		}
		return v, nil
	}
	return p.exported(true, name, key)
}

func (p *planResolver) SecretMap(name string) (map[string]string, error) {
	if d, ok := p.repoSecret(name); ok {
		return d, nil
	}
	return nil, fmt.Errorf("secret %s/%s not found", p.r.Namespace, name)
}

// recorder wraps the graph's resolver while planning and writes down every
// value it gave: the Inputs of the planned resource.
type recorder struct {
	*resolver
	in Inputs
	// secrets are the values from Secrets in the config map values read.
	secrets []manifest.SecretValue
}

func (c *recorder) ResourceID(group, kind, name string) (string, error) {
	id, err := c.resolver.ResourceID(group, kind, name)
	if err == nil {
		if c.in.References == nil {
			c.in.References = map[string]string{}
		}
		c.in.References[group+"/"+kind+"/"+name] = id
	}
	return id, err
}

// source says where a config map or secret key comes from: the repository
// (or credentials directory), or an export.
func (c *recorder) note(secret bool, name, key, value string, err error) {
	if err != nil && !errors.Is(err, aso.ErrUnknown) {
		return
	}
	ns := c.n.Namespace
	m := c.g.inputs.configMaps
	if secret {
		m = c.g.inputs.secrets
	}
	if _, repo := m[ns+"/"+name]; repo && err == nil {
		if secret {
			c.in.Secrets = appendUnique(c.in.Secrets, name+"/"+key)
			return
		}
		if c.in.ConfigMaps == nil {
			c.in.ConfigMaps = map[string]string{}
		}
		c.in.ConfigMaps[name+"/"+key] = value
		if s, ok := manifest.SecretIn(value, c.g.inputs.cmSecrets[ns+"/"+name]); ok {
			c.secrets = appendSecretValues(c.secrets, s)
		}
		return
	}
	e := ExportedInput{Secret: secret, Name: name, Key: key}
	if p := c.g.inputs.producer(ns, secret, name, key); p != nil {
		e.Producer = p.Key()
	}
	for _, x := range c.in.Exported {
		if x == e {
			return
		}
	}
	c.in.Exported = append(c.in.Exported, e)
}

func (c *recorder) ConfigMap(name, key string) (string, error) {
	v, err := c.resolver.ConfigMap(name, key)
	c.note(false, name, key, v, err)
	return v, err
}

func (c *recorder) Secret(name, key string) (string, error) {
	v, err := c.resolver.Secret(name, key)
	c.note(true, name, key, "", err)
	return v, err
}

func (c *recorder) SecretMap(name string) (map[string]string, error) {
	d, err := c.resolver.SecretMap(name)
	if err == nil {
		c.in.Secrets = appendUnique(c.in.Secrets, name)
	}
	return d, err
}

// inputs returns what was recorded, sorted, or nil when nothing was read.
func (c *recorder) inputs() *Inputs {
	in := c.in
	if in.References == nil && in.ConfigMaps == nil && in.Secrets == nil && in.Exported == nil {
		return nil
	}
	sort.Strings(in.Secrets)
	sort.Slice(in.Exported, func(i, j int) bool {
		a, b := in.Exported[i], in.Exported[j]
		if a.Secret != b.Secret {
			return !a.Secret
		}
		return a.Name+"/"+a.Key < b.Name+"/"+b.Key
	})
	return &in
}

func appendUnique(l []string, s string) []string {
	for _, x := range l {
		if x == s {
			return l
		}
	}
	return append(l, s)
}

// PendingFrom returns the values r reads that the resource with state key
// producer exports.
func (r *Resource) PendingFrom(producer string) []ExportedInput {
	if r.Inputs == nil {
		return nil
	}
	var out []ExportedInput
	for _, e := range r.Inputs.Exported {
		if e.Producer == producer {
			out = append(out, e)
		}
	}
	return out
}

// Missing describes the exported values r reads that outputs do not hold,
// naming each and the resource that should have exported it; reason is
// SecretNotFound when a secret is among them, else ConfigMapNotFound.
func (r *Resource) Missing(outputs Outputs) (reason string, missing []string) {
	reason = "ConfigMapNotFound"
	if r.Inputs == nil {
		return reason, nil
	}
	for _, e := range r.Inputs.Exported {
		if _, ok := outputs[exportKey(r.Namespace, e.Secret, e.Name, e.Key)]; ok {
			continue
		}
		if e.Secret {
			reason = "SecretNotFound"
		}
		by := ""
		if e.Producer != "" {
			if ns, _, kind, name, ok := splitKey(e.Producer); ok {
				by = fmt.Sprintf(" (exported by %s/%s/%s)", ns, kind, name)
			}
		}
		missing = append(missing, fmt.Sprintf("%s %s key %s%s", e.what(), e.Name, e.Key, by))
	}
	return reason, missing
}

func splitKey(key string) (namespace, group, kind, name string, ok bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 {
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], parts[3], true
}

// UnmarshalJSON reads a planned resource back, keeping the manifest's numbers
// as the parser gives them (int64 when whole, else float64), so that the
// request built again from it is the one built while planning.
func (r *Resource) UnmarshalJSON(b []byte) error {
	type plain Resource
	var aux struct {
		*plain
		Manifest json.RawMessage `json:"manifest,omitempty"`
	}
	aux.plain = (*plain)(r)
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	r.Manifest = nil
	if len(aux.Manifest) == 0 || string(aux.Manifest) == "null" {
		return nil
	}
	d := json.NewDecoder(bytes.NewReader(aux.Manifest))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		return fmt.Errorf("manifest of %s: %w", r.ID(), err)
	}
	r.Manifest, _ = numbers(m).(map[string]any)
	return nil
}

// numbers turns json.Number values into int64 (whole numbers) or float64.
func numbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = numbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = numbers(e)
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}
