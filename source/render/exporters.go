package render

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// exportedBy reports whether one of the documents is a resource that
// exports the ConfigMap or Secret r names (spec.operatorSpec.configMaps,
// secrets, configMapExpressions or secretExpressions): only such a source
// may be pending (known after apply) when it does not exist yet. A source
// nobody exports will never exist, and is an error naming it (or, optional,
// is skipped as Flux skips it).
//
// The name and kind must match; the namespace is not compared, since a
// kustomization or a Flux Kustomization's targetNamespace may still move a
// raw document: the planner checks the pending source against the exports
// of the revision's resources, namespace included (planner.checkPending).
func exportedBy(docs []candidate, r Ref) bool {
	for _, d := range docs {
		if !strings.Contains(d.text, "operatorSpec") || !strings.Contains(d.text, r.Name) {
			continue
		}
		if docExports(d.text, r) {
			return true
		}
	}
	return false
}

// docExports reports whether the document's spec.operatorSpec writes the
// ConfigMap or Secret r names.
func docExports(text string, r Ref) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false // yaml.v3 is fuzzed upstream; a panic means "not an exporter"
		}
	}()
	var doc struct {
		Spec struct {
			OperatorSpec struct {
				ConfigMaps           map[string]exportDest `yaml:"configMaps"`
				Secrets              map[string]exportDest `yaml:"secrets"`
				ConfigMapExpressions []exportDest          `yaml:"configMapExpressions"`
				SecretExpressions    []exportDest          `yaml:"secretExpressions"`
			} `yaml:"operatorSpec"`
		} `yaml:"spec"`
	}
	if yaml.Unmarshal([]byte(text), &doc) != nil {
		return false
	}
	op := doc.Spec.OperatorSpec
	if r.Kind == "" || r.Kind == "ConfigMap" {
		for _, d := range op.ConfigMaps {
			if d.Name == r.Name {
				return true
			}
		}
		for _, d := range op.ConfigMapExpressions {
			if d.Name == r.Name {
				return true
			}
		}
	}
	if r.Kind == "" || r.Kind == "Secret" {
		for _, d := range op.Secrets {
			if d.Name == r.Name {
				return true
			}
		}
		for _, d := range op.SecretExpressions {
			if d.Name == r.Name {
				return true
			}
		}
	}
	return false
}

// exportDest is an operatorSpec destination: the ConfigMap or Secret it
// writes (other fields are not read).
type exportDest struct {
	Name string `yaml:"name"`
}
