package planner

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/manifest"
)

// inputs holds the config maps and secrets of a snapshot plus those that
// resources export, and answers the converter's look-ups.
type inputs struct {
	configMaps map[string]map[string]string // ns/name → data
	// cmSecrets are the values from Secrets substitution placed in a
	// config map, ns/name → values.
	cmSecrets map[string][]manifest.SecretValue
	secrets   map[string]map[string]string // ns/name → data (repo, then local)
	producers map[string]*Node             // exportKey → producing node
}

func newInputs(local map[string]map[string]string) *inputs {
	in := &inputs{configMaps: map[string]map[string]string{}, secrets: map[string]map[string]string{}}
	for k, v := range local {
		in.secrets[k] = v
	}
	return in
}

func (in *inputs) addConfigMap(ns, name string, data map[string]string, secrets []manifest.SecretValue) {
	in.configMaps[ns+"/"+name] = data
	if len(secrets) > 0 {
		if in.cmSecrets == nil {
			in.cmSecrets = map[string][]manifest.SecretValue{}
		}
		in.cmSecrets[ns+"/"+name] = secrets
	}
}

func (in *inputs) addSecret(ns, name string, data map[string]string) {
	in.secrets[ns+"/"+name] = data
}

func (in *inputs) secret(ns, name string) (map[string]string, bool) {
	d, ok := in.secrets[ns+"/"+name]
	return d, ok
}

func (in *inputs) hasConfigMap(ns, name string) bool { _, ok := in.configMaps[ns+"/"+name]; return ok }
func (in *inputs) hasSecret(ns, name string) bool    { _, ok := in.secrets[ns+"/"+name]; return ok }

func (in *inputs) hasKey(ns string, secret bool, name, key string) bool {
	m := in.configMaps
	if secret {
		m = in.secrets
	}
	_, ok := m[ns+"/"+name][key]
	return ok
}

// producer returns the node exporting the key, or the whole config map or
// secret (an expression export without a key yields a map).
func (in *inputs) producer(ns string, secret bool, name, key string) *Node {
	if p := in.producers[exportKey(ns, secret, name, key)]; p != nil {
		return p
	}
	return in.producers[exportKey(ns, secret, name, "")]
}

// exportedKeys lists the keys resources export into a config map or secret.
func (in *inputs) exportedKeys(ns string, secret bool, name string) []string {
	prefix := exportKey(ns, secret, name, "")
	var keys []string
	for k := range in.producers {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" {
			keys = append(keys, strconv.Quote(rest))
		}
	}
	sort.Strings(keys)
	return keys
}

// Outputs are exported values known so far, keyed by exportKey. Secret
// values may be present; they are never rendered.
type Outputs map[string]string

// OutputKey is the key of an exported config map or secret value in Outputs.
func OutputKey(namespace string, secret bool, name, key string) string {
	return exportKey(namespace, secret, name, key)
}

// resolver answers aso.Convert's look-ups for one node.
type resolver struct {
	g       *Graph
	n       *Node
	outputs Outputs
}

var _ aso.Resolver = (*resolver)(nil)

func (r *resolver) ResourceID(group, kind, name string) (string, error) {
	t := r.g.byKey[Key(r.n.Namespace, group, kind, name)]
	if t == nil {
		t = r.g.findLoose(r.n.Namespace, group, kind, name)
	}
	if t == nil {
		return "", fmt.Errorf("%s %q not found in namespace %q", kind, name, r.n.Namespace)
	}
	return t.ARMID, nil
}

func (r *resolver) lookup(secret bool, name, key string) (string, error) {
	ns := r.n.Namespace
	m := r.g.inputs.configMaps
	what := "config map"
	if secret {
		m, what = r.g.inputs.secrets, "secret"
	}
	if d, ok := m[ns+"/"+name]; ok {
		v, ok := d[key]
		if !ok {
			return "", fmt.Errorf("%s %s/%s has no key %q", what, ns, name, key)
		}
		return v, nil
	}
	if v, ok := r.outputs[exportKey(ns, secret, name, key)]; ok {
		return v, nil
	}
	if r.g.inputs.producer(ns, secret, name, key) != nil {
		return "", aso.ErrUnknown
	}
	return "", fmt.Errorf("%s %s/%s not found", what, ns, name)
}

func (r *resolver) ConfigMap(name, key string) (string, error) { return r.lookup(false, name, key) }
func (r *resolver) Secret(name, key string) (string, error)    { return r.lookup(true, name, key) }

func (r *resolver) SecretMap(name string) (map[string]string, error) {
	if d, ok := r.g.inputs.secrets[r.n.Namespace+"/"+name]; ok {
		return d, nil
	}
	return nil, fmt.Errorf("secret %s/%s not found", r.n.Namespace, name)
}

// Convert builds the node's ARM body with the outputs known so far.
func (g *Graph) Convert(n *Node, outputs Outputs) (*aso.Body, error) {
	return aso.Convert(n.Kind, n.Spec, n.AzureName, &resolver{g: g, n: n, outputs: outputs})
}

// SecretData returns a secret by namespace and name (repository secrets, then
// the local credentials directory).
func (g *Graph) SecretData(namespace, name string) (map[string]string, bool) {
	return g.inputs.secret(namespace, name)
}
