package forge_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestCITemplates: the CI templates in examples/ci are YAML and run
// validate, plan --out, the comment and the apply of the saved plan.
func TestCITemplates(t *testing.T) {
	for _, name := range []string{"github-actions.yml", "gitlab-ci.yml", "azure-pipelines.yml"} {
		b, err := os.ReadFile(filepath.Join("..", "examples", "ci", name))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := yaml.Unmarshal(b, &doc); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, want := range []string{"gitaso validate", "gitaso plan --out plan.json", "gitaso comment --plan plan.json --refused plan.err", "gitaso apply "} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not run %q", name, want)
			}
		}
	}
}
