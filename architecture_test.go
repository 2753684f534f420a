// Package architecture_test enforces the import rules of DESIGN.md and
// docs/internal-contracts.md: which packages may depend on which. It lives
// at the repository root because the rules are about the whole module.
package architecture_test

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/gitaso/gitaso"

// rules lists, per package (and its sub-packages unless noted), the
// packages its whole dependency closure must not contain. A forbidden entry
// matches the path and everything below it.
var rules = []struct {
	pkg       string
	forbidden []string
	why       string
}{
	{"manifest", []string{module + "/", "gopkg.in/yaml.v3", "github.com/go-git", "go.etcd.io/bbolt"},
		"the parsed objects are a leaf: standard library and internal/diag only"},
	{"record", []string{module + "/", "go.etcd.io/bbolt"},
		"the records are a leaf: standard library only"},
	{"aso", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/azure",
		module + "/state", module + "/source", module + "/api", "github.com/Azure/azure-sdk-for-go",
		"github.com/go-git", "go.etcd.io/bbolt"},
		"ASO's knowledge is pure; rules that need Azure take an aso.ARM"},
	{"planner", []string{module + "/executor", module + "/azure", module + "/reconcile", module + "/api",
		module + "/source", module + "/state", module + "/cluster", "github.com/Azure/azure-sdk-for-go", "github.com/go-git",
		"go.etcd.io/bbolt", "k8s.io/client-go", "sigs.k8s.io/controller-runtime"},
		"planning works air-gapped and stays pure: no Azure, no Git, no store, no cluster (only the values it read)"},
	{"source", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/state",
		module + "/api"},
		"reading a repository knows nothing of plans"},
	{"state", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/source",
		module + "/azure", module + "/api", module + "/aso"},
		"the store keeps records; it knows no rules"},
	{"azure/emulator", []string{module + "/"},
		"the emulator stands for Azure: it never imports gitaso's packages"},
	{"executor", []string{module + "/source", module + "/reconcile", module + "/api", module + "/cluster"},
		"the executor applies a Plan, never YAML"},
	{"cluster", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/source",
		module + "/state", module + "/api"},
		"the cluster adapter is an output and an input of reconcile: it knows no plans, no YAML, no store"},
}

// allowed are gitaso packages a leaf may import despite a module-wide ban.
var allowed = map[string][]string{
	"manifest":       {module + "/internal/diag"},
	"azure/emulator": {module + "/azure/emulator"},
}

// TestImportRules checks the dependency closure of every package against
// the rules.
func TestImportRules(t *testing.T) {
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			pkgs := list(t, module+"/"+r.pkg+"/...")
			for _, p := range pkgs {
				for _, dep := range deps(t, p) {
					if dep == p || isAllowed(r.pkg, dep) {
						continue
					}
					for _, f := range r.forbidden {
						if dep == strings.TrimSuffix(f, "/") || strings.HasPrefix(dep, strings.TrimSuffix(f, "/")+"/") {
							t.Errorf("%s depends on %s (%s)", p, dep, r.why)
						}
					}
				}
			}
		})
	}
}

func isAllowed(pkg, dep string) bool {
	for _, a := range allowed[pkg] {
		if dep == a || strings.HasPrefix(dep, a+"/") {
			return true
		}
	}
	return false
}

func list(t *testing.T, pattern string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", pattern).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %s: %v\n%s", pattern, err, out)
	}
	return strings.Fields(string(out))
}

func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
	}
	return strings.Fields(string(out))
}
