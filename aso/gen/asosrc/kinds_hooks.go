package asosrc

import (
	"fmt"
	"go/ast"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// hookMethods maps the methods of ASO's extension interfaces
// (v2/pkg/genruntime/extensions and genruntime) to the hook names of
// kinds.json. A kind has a hook when the <Kind>Extension type of its group's
// customizations package has the method.
var hookMethods = map[string]string{
	"ModifyARMResource":          "armPayloadModifier",     // extensions.ARMResourceModifier
	"ExportKubernetesSecrets":    "azureGeneratedSecrets",  // genruntime.KubernetesSecretExporter
	"Delete":                     "customDelete",           // extensions.Deleter
	"Import":                     "customImport",           // extensions.Importer
	"ClassifyError":              "errorClassifier",        // extensions.ErrorClassifier
	"ExportKubernetesConfigMaps": "generatedConfigMaps",    // genruntime.KubernetesConfigExporter
	"PostReconcileCheck":         "postReconcileCheck",     // extensions.PostReconciliationChecker
	"PreReconcileCheck":          "preReconcileCheck",      // extensions.PreReconciliationChecker
	"PreReconcileOwnerCheck":     "preReconcileOwnerCheck", // extensions.PreReconciliationOwnerChecker
	"Success":                    "successHandler",         // extensions.SuccessfulCreationHandler
	// Before v2.11 one interface, genruntime.KubernetesExporter, exported
	// both the secrets and the config maps made from Azure's answers.
	"ExportKubernetesResources": "azureGeneratedSecrets",
}

// notHooks are exported methods of extension types that are not hooks.
var notHooks = map[string]bool{
	"GetExtendedResources": true, // genruntime.ResourceExtension, generated for every kind
}

// readHooks reads v2/api/<dir>/customizations and returns, per kind, the
// sorted names of the hooks its extension type implements. Exported
// methods it does not know are returned in unknown (file: Type.Method), so
// that a new extension interface in a later ASO release is noticed.
func readHooks(fsys fs.FS, dir string) (hooks map[string][]string, unknown []string, err error) {
	cdir := path.Join("v2/api", dir, "customizations")
	if fi, err := fs.Stat(fsys, cdir); err != nil || !fi.IsDir() {
		return nil, nil, nil
	}
	p, err := parseKindPkg(fsys, cdir, func(string) bool { return true })
	if err != nil {
		return nil, nil, err
	}
	hooks = map[string][]string{}
	for recv, ms := range p.methods {
		kind, ok := strings.CutSuffix(recv, "Extension")
		if !ok || kind == "" {
			continue
		}
		for name, fn := range ms {
			if h, ok := hookMethods[name]; ok {
				hooks[kind] = append(hooks[kind], h)
			} else if ast.IsExported(name) && !notHooks[name] {
				unknown = append(unknown, fmt.Sprintf("%s: %s.%s", p.mfiles[fn], recv, name))
			}
		}
	}
	for _, hs := range hooks {
		sort.Strings(hs)
	}
	sort.Strings(unknown)
	return hooks, unknown, nil
}

// readNameDefaults reads v2/api/<dir>/<version>/webhook/*_defaults.go (ASO's
// hand-written defaulting webhooks) and returns the kinds whose webhook sets
// azureName to a UUIDv5 (randextensions.MakeUUIDName): seeded by the owner
// with MakeUniqueOwnerScopedStringLegacy (ownerScopedLegacy) or
// MakeUniqueOwnerScopedString (ownerScoped), and with a random UUID when
// operatorSpec.namingConvention is random (MakeRandomUUID).
func readNameDefaults(fsys fs.FS, dir, version string) (map[string]*AzureNameDefault, error) {
	wdir := path.Join("v2/api", dir, version, "webhook")
	if fi, err := fs.Stat(fsys, wdir); err != nil || !fi.IsDir() {
		return nil, nil
	}
	p, err := parseKindPkg(fsys, wdir, func(n string) bool { return strings.HasSuffix(n, "_defaults.go") })
	if err != nil {
		return nil, err
	}
	out := map[string]*AzureNameDefault{}
	for kind, ms := range p.methods {
		var calls map[string]bool
		for _, fn := range ms {
			c := randCalls(fn)
			if c["MakeUUIDName"] {
				calls = c
			}
		}
		if calls == nil {
			continue
		}
		d := &AzureNameDefault{NamingConventionRandom: calls["MakeRandomUUID"]}
		switch {
		case calls["MakeUniqueOwnerScopedStringLegacy"]:
			d.UUIDv5 = "ownerScopedLegacy"
		case calls["MakeUniqueOwnerScopedString"]:
			d.UUIDv5 = "ownerScoped"
		default:
			var fn string
			for _, m := range ms {
				fn = p.mfiles[m]
			}
			return nil, fmt.Errorf("%s: %s calls randextensions.MakeUUIDName with a seed other than MakeUniqueOwnerScopedString(Legacy)", fn, kind)
		}
		out[kind] = d
	}
	return out, nil
}

// randCalls lists the randextensions functions a method calls.
func randCalls(fn *ast.FuncDecl) map[string]bool {
	calls := map[string]bool{}
	if fn.Body == nil {
		return calls
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		c, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if s, ok := c.Fun.(*ast.SelectorExpr); ok {
			if id, ok := s.X.(*ast.Ident); ok && id.Name == "randextensions" {
				calls[s.Sel.Name] = true
			}
		}
		return true
	})
	return calls
}
