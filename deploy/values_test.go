package deploy_test

import (
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// wholeValues are maps documented as one value (Kubernetes structures).
var wholeValues = map[string]bool{"resources": true, "podSecurityContext": true, "securityContext": true}

// TestValuesDocumented checks that every value of values.yaml has a comment
// there and a row in docs/deploy.md.
func TestValuesDocumented(t *testing.T) {
	b, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile("../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var walk func(m *yaml.Node, prefix string)
	walk = func(m *yaml.Node, prefix string) {
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			key := prefix + k.Value
			if v.Kind == yaml.MappingNode && len(v.Content) > 0 && !wholeValues[key] {
				walk(v, key+".")
				continue
			}
			n++
			if strings.TrimSpace(k.HeadComment) == "" {
				t.Errorf("values.yaml: %s (line %d) has no comment", key, k.Line)
			}
			if !strings.Contains(string(docs), "| `"+key+"` |") {
				t.Errorf("docs/deploy.md: no row for the value %s", key)
			}
		}
	}
	walk(doc.Content[0], "")
	if n < 50 {
		t.Errorf("found only %d values", n)
	}
}
