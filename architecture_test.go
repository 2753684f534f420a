// Package architecture_test enforces the import rules of DESIGN.md and
// docs/internal-contracts.md: which packages may depend on which, for every
// package of the module, and that ASO's own names (its annotations and
// Secret names) are written in package aso only, and that the product
// carries no value in a context.Context but a logger and the caller's
// identity. It lives at the repository root because the rules are about
// the whole module.
package architecture_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
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
	{"emulator", []string{module + "/"},
		"the emulator stands for Azure: it never imports gitaso's packages"},
	{"executor", []string{module + "/source", module + "/reconcile", module + "/api", module + "/cluster"},
		"the executor applies a Plan, never YAML"},
	{"cluster", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/source",
		module + "/state", module + "/api"},
		"the cluster adapter is an output and an input of reconcile: it knows no plans, no YAML, no store"},
	{"azure", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/source",
		module + "/state", module + "/api", module + "/cluster"},
		"the Azure client speaks ARM and Entra ID; it knows no plans, no YAML, no store"},
	{"migrate", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/state",
		module + "/azure", module + "/cluster", module + "/source", module + "/api", "k8s.io/client-go"},
		"moving objects between ASO and gitaso is data: the CLI wires the cluster, the state and the plans"},
	{"reconcile", []string{module + "/api", module + "/web", module + "/internal/cli", module + "/autoplan"},
		"the loop knows no HTTP and no command line: the API and the CLI call it"},
	{"autoplan", []string{module + "/api", module + "/web", module + "/internal/cli"},
		"pull-request plans run the loop's pieces; they serve nothing"},
	{"forge", []string{module + "/executor", module + "/reconcile", module + "/azure", module + "/state",
		module + "/source", module + "/cluster", module + "/api"},
		"a forge comment renders a Plan: it applies nothing and reads no repository"},
	{"api", []string{module + "/planner", module + "/executor", module + "/reconcile", module + "/source",
		module + "/azure", module + "/cluster", module + "/aso"},
		"the API serves the store's records and metrics; the daemon sits behind an interface"},
	{"metrics", []string{module + "/"}, "metrics count records: standard library and record only"},
	{"web", []string{module + "/"}, "the page is static assets reading the API's JSON"},
	{"access", []string{module + "/"}, "who may do what is a leaf: the API, the page and the forge share it"},
	{"internal/diag", []string{module + "/"}, "diagnostics are a leaf"},
	{"internal/syncbuf", []string{module + "/"}, "a leaf"},
	{"internal/rss", []string{module + "/"}, "a leaf"},
	{"internal/cli", harnesses, "the shipped binary carries no test harness"},
	{"cmd/gitaso", harnesses, "the shipped binary carries no test harness"},
}

// harnesses are the module's test and measurement harnesses, examples and
// generators: they may import anything, and the shipped binary imports
// none of them (the rules of internal/cli and cmd/gitaso).
var harnesses = []string{
	// Everything under harness/: the ASO anchor, the reliability and API
	// load harnesses, benchmark data, the forge test server, hostile inputs,
	// the container image builder.
	module + "/harness",
	module + "/e2e", module + "/examples", module + "/deploy",
	// Test kits beside the product they test.
	module + "/internal/emutest", module + "/internal/gittest", module + "/internal/kubetest",
	module + "/internal/fixtures",
	// The generators of the catalog, roles and removed versions read ASO's
	// Git history and source; what they write is the pure package aso.
	module + "/aso/gen",
}

func isHarness(p string) bool {
	for _, h := range harnesses {
		if p == h || strings.HasPrefix(p, h+"/") {
			return true
		}
	}
	return false
}

// allowed are gitaso packages a leaf may import despite a module-wide ban.
var allowed = map[string][]string{
	"manifest": {module + "/internal/diag"},
	"emulator": {module + "/emulator"},
	"metrics":  {module + "/record"},
}

// TestEveryPackageHasARule: each package of the module falls under a rule
// above or is a harness; a new package must say where it stands.
func TestEveryPackageHasARule(t *testing.T) {
	covered := func(p string) bool {
		if p == module {
			return true // this test
		}
		for _, r := range rules {
			if pre := module + "/" + r.pkg; p == pre || strings.HasPrefix(p, pre+"/") {
				return true
			}
		}
		return isHarness(p)
	}
	for _, p := range list(t, module+"/...") {
		if !covered(p) {
			t.Errorf("%s has no import rule and is not a harness: add it to rules or harnesses", p)
		}
	}
}

// asoNames are ASO's annotation prefix and the Secret and ConfigMap names
// ASO reads: package aso names them (aso.AnnotationReconcilePolicy,
// aso.AnnotationCredentialFrom, aso.NamespaceCredentialSecret, ...); every
// other package uses those constants.
var asoNames = []string{"serviceoperator.azure.com/", "aso-credential", "aso-controller-settings"}

// TestASONamesOnlyInASO: no string literal outside package aso (and its
// sub-packages) holds one of ASO's names, and none is ".azure.com" ("is
// this an ASO kind" is aso.IsASOGroup). Tests are excepted: their
// manifests are ASO's input as users write it, literally.
func TestASONamesOnlyInASO(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		if dir := filepath.ToSlash(filepath.Dir(path)); dir == "aso" || strings.HasPrefix(dir, "aso/") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			v, err := strconv.Unquote(lit.Value)
			if err != nil {
				v = lit.Value
			}
			if v == ".azure.com" {
				t.Errorf("%s: an ASO group test of its own: use aso.IsASOGroup", fset.Position(lit.Pos()))
			}
			for _, name := range asoNames {
				if strings.Contains(v, name) {
					t.Errorf("%s: the string literal %s holds ASO's %q: use package aso's constant", fset.Position(lit.Pos()), lit.Value, name)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestImportRules checks the dependency closure of every package against
// the rules.
func TestImportRules(t *testing.T) {
	for _, r := range rules {
		t.Run(r.pkg, func(t *testing.T) {
			pkgs := list(t, module+"/"+r.pkg+"/...")
			for _, p := range pkgs {
				if isHarness(p) {
					continue // a harness below a rule's package (aso/gen) may import anything
				}
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

// TestLayoutIsListed: every top-level folder is in the README's Layout table,
// so a newcomer reading it sees the design's parts, the emulator and the
// harnesses told apart, and a new folder must say which it is.
func TestLayoutIsListed(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(readme), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no ## Layout section")
	}
	if end := strings.Index(table, "\n## "); end >= 0 {
		table = table[:end]
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || name == "bin" || name == "demo-data" {
			continue
		}
		if !strings.Contains(table, "| `"+name+"` |") {
			t.Errorf("top-level folder %s/ is not in README.md's Layout table: say whether it is product, emulator or harness", name)
		}
	}
}

// contextValues are the product packages allowed to carry a value in a
// context.Context, and why: only request-scoped data a call logs or
// checks, never what it waits on or reports back. Semaphores, callbacks
// and side results are parameters and return values (a client's
// azure.CallOptions, a render's pass), so that a reader of the caller sees
// what a call waits on and what it reports.
var contextValues = map[string]string{
	"aso":    "the logger ASO's rules report to (aso.WithLogger)",
	"access": "the caller of one HTTP request (access.WithIdentity), set by the API's authentication and read by its handlers: request-scoped data, no control flow",
}

// TestNoContextValuesInProduct: no package of the shipped product, outside
// contextValues, calls context.WithValue. Tests and harnesses are excepted.
func TestNoContextValuesInProduct(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if _, ok := contextValues[dir]; ok || isHarness(module+"/"+dir) {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != "WithValue" {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "context" {
				t.Errorf("%s: context.WithValue in package %s: pass it as a parameter or return it (or list the package in contextValues, for a logging value)",
					fset.Position(sel.Pos()), dir)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
