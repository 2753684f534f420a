package render

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// Ref names a ConfigMap or Secret of the repository whose data are
// substitution variables, like an entry of a Flux Kustomization's
// spec.postBuild.substituteFrom (which names objects of the cluster).
type Ref struct {
	Kind      string // "ConfigMap", "Secret", or "" for either
	Namespace string // "" means "default"
	Name      string
	Optional  bool // a missing object is not an error
}

// String renders the ref in the syntax ParseRef reads.
func (r Ref) String() string {
	s := r.ns() + "/" + r.Name
	if r.Kind != "" {
		s = r.Kind + "/" + s
	}
	if r.Optional {
		s += ",optional"
	}
	return s
}

func (r Ref) ns() string {
	if r.Namespace == "" {
		return manifest.DefaultNamespace
	}
	return r.Namespace
}

// ParseRef reads "[Kind/]namespace/name[,optional]", e.g.
// "platform/platform-vars", "Secret/platform/platform-secrets,optional" or
// "name" alone (namespace "default"). Kind is ConfigMap or Secret (any
// case); without it, the one object of either kind with that name is used.
func ParseRef(s string) (Ref, error) {
	var r Ref
	spec, opt, hasOpt := strings.Cut(strings.TrimSpace(s), ",")
	if hasOpt {
		if strings.TrimSpace(opt) != "optional" {
			return r, fmt.Errorf("substitute-from %q: unknown option %q (only \"optional\")", s, opt)
		}
		r.Optional = true
	}
	parts := strings.Split(spec, "/")
	switch len(parts) {
	case 1:
		r.Namespace, r.Name = manifest.DefaultNamespace, parts[0]
	case 2:
		r.Namespace, r.Name = parts[0], parts[1]
	case 3:
		switch strings.ToLower(parts[0]) {
		case "configmap":
			r.Kind = "ConfigMap"
		case "secret":
			r.Kind = "Secret"
		default:
			return r, fmt.Errorf("substitute-from %q: kind %q: want ConfigMap or Secret", s, parts[0])
		}
		r.Namespace, r.Name = parts[1], parts[2]
	default:
		return r, fmt.Errorf("substitute-from %q: want [ConfigMap/|Secret/]namespace/name[,optional]", s)
	}
	if r.Name == "" || (len(parts) > 1 && r.Namespace == "") {
		return r, fmt.Errorf("substitute-from %q: empty namespace or name", s)
	}
	return r, nil
}

// match reports whether o is the object r names.
func (r Ref) match(o manifest.Object) bool {
	if o.Name() != r.Name || o.Namespace() != r.ns() {
		return false
	}
	switch r.Kind {
	case "ConfigMap":
		return o.IsConfigMap()
	case "Secret":
		return o.IsSecret()
	}
	return o.IsConfigMap() || o.IsSecret()
}

// candidate is a document that may hold a variable source.
type candidate struct {
	file      string
	line      int // first line of the document, 0 for generated text
	generated bool
	text      string
}

// missingSource is the error of a substitution source that is neither in
// the files nor exported.
func missingSource(r Ref, exports bool) *diag.Error {
	what := "ConfigMap or Secret"
	if r.Kind != "" {
		what = r.Kind
	}
	where := "in the files read (below the source path)"
	if exports {
		where += ", among the values gitaso's resources exported, or among those the revision's resources export (operatorSpec)"
	}
	return &diag.Error{Object: r.ns() + "/" + r.Name, Msg: fmt.Sprintf(
		"substitute-from %s: no %s %s/%s %s; add ',optional' if it may be absent", r, what, r.ns(), r.Name, where)}
}

// loadVars reads the variables of refs from the documents, in order (a
// later ref overrides an earlier one), then overrides them with inline.
//
// A ConfigMap or Secret the documents do not hold is looked up in exported
// (when not nil): the values gitaso's resources exported (operatorSpec) at
// their last apply, as Flux reads a ConfigMap ASO wrote into the cluster.
// When it is not there either, pending is not nil and a resource among the
// documents exports it (exportedBy), the ref is pending rather than an
// error, optional or not: it exists once that resource is applied, which
// the planner checks (manifest.PendingValue). Otherwise a missing ref is an
// error naming it, or skipped when optional.
//
// secret maps each variable whose value came from a Secret (of the
// repository, decrypted or not, exported, or read from the cluster) to
// "Secret namespace/name"; an inline variable overriding one is not.
//
// A ref that stores (not nil) maps to an App Configuration store is read
// from the store only (appconfig.go), its Key Vault references secret.
func loadVars(refs []Ref, docs []candidate, inline Vars, exported ExportedData, pending *[]Ref, stores storeLookup) (vars Vars, secret map[string]string, errs diag.List) {
	vars, secret = Vars{}, map[string]string{}
	for _, r := range refs {
		if sv, ok, err := stores.lookup(r); ok { // appconfig.go: a store stands for the object
			if err != nil {
				errs = append(errs, err)
				continue
			}
			for _, k := range sortedKeys(sv.vars) {
				vars[k] = sv.vars[k]
				setSecretFrom(secret, k, sv.secret[k])
			}
			continue
		}
		var found []manifest.Object
		for _, d := range docs {
			if !strings.Contains(d.text, r.Name) || !(strings.Contains(d.text, "ConfigMap") || strings.Contains(d.text, "Secret")) {
				continue
			}
			objs, err := source.ParseFile(d.file, []byte(d.text))
			if err != nil {
				continue // Build reports the document's errors
			}
			for _, o := range objs {
				if r.match(o) {
					o.Line += d.line - 1
					if d.generated {
						o.Line = 0
					}
					found = append(found, o)
				}
			}
		}
		if len(found) == 0 && exported != nil {
			if data, isSecret, ok := lookupExported(exported, r); ok {
				for _, k := range sortedKeys(data) {
					if ValidName(k) {
						vars[k] = cleanValue(data[k])
						setSecret(secret, k, isSecret, r.ns(), r.Name)
					}
				}
				continue
			}
		}
		switch {
		case len(found) == 0 && exported != nil && pending != nil && exportedBy(docs, r):
			// optional or not: absent only until its exporter is applied
			*pending = append(*pending, r)
			continue
		case len(found) == 0 && r.Optional:
			continue
		case len(found) == 0:
			errs = append(errs, missingSource(r, exported != nil))
			continue
		case len(found) > 1 && found[0].Kind() != found[1].Kind():
			errs = append(errs, &diag.Error{File: found[0].File, Line: found[0].Line, Object: found[0].ID(), Msg: fmt.Sprintf(
				"substitute-from %s: both a ConfigMap and a Secret are named %s/%s (also at %s:%d); write ConfigMap/%s/%s or Secret/%s/%s",
				r, r.ns(), r.Name, found[1].File, found[1].Line, r.ns(), r.Name, r.ns(), r.Name)})
			continue
		}
		o := found[0] // duplicates of one kind are reported by source.Build
		var data map[string]string
		var err error
		if o.IsSecret() {
			data, err = manifest.SecretData(o)
		} else {
			data, err = manifest.ConfigMapData(o)
		}
		if err != nil {
			errs = append(errs, diag.AsList(err)...)
			continue
		}
		field := "data."
		for _, k := range sortedKeys(data) {
			if !ValidName(k) {
				if o.IsSecret() {
					field = "data/stringData."
				}
				errs = append(errs, &diag.Error{File: o.File, Line: o.Line, Object: o.ID(), Field: field + k, Msg: fmt.Sprintf(
					"substitute-from %s: %q is not a valid variable name (letters, digits and '_', not starting with a digit; Flux refuses it too)", r, k)})
				continue
			}
			vars[k] = cleanValue(data[k])
			setSecret(secret, k, o.IsSecret(), o.Namespace(), o.Name())
		}
	}
	for k, v := range inline {
		vars[k] = cleanValue(v)
		delete(secret, k)
	}
	return vars, secret, errs
}

// setSecret records (isSecret) or forgets (a later ConfigMap overrides it)
// that variable k came from the Secret namespace/name.
func setSecret(secret map[string]string, k string, isSecret bool, namespace, name string) {
	if isSecret {
		secret[k] = "Secret " + namespace + "/" + name
	} else {
		delete(secret, k)
	}
}

// secretsUsed returns the values of the variables from Secrets (secret, see
// loadVars) that the expressions of text name, nil when none does. A name
// that only starts like one counts too: the value is then masked where it
// is not needed, never shown where it is.
func secretsUsed(text string, vars Vars, secret map[string]string) []manifest.SecretValue {
	if len(secret) == 0 || !strings.Contains(text, "${") {
		return nil
	}
	var out []manifest.SecretValue
	for _, k := range sortedKeys(secret) {
		if v := vars[k]; v != "" && strings.Contains(text, "${"+k) {
			out = append(out, manifest.NewSecretValue(v, secret[k]))
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// ExportedData returns the values gitaso's resources exported into the
// ConfigMap (secret false) or Secret namespace/name, and whether there is
// such an export.
type ExportedData func(secret bool, namespace, name string) (map[string]string, bool)

// pendingExternal is the External reporting ref as a pending source read
// by user (a Flux Kustomization, or --substitute-from).
func pendingExternal(r Ref, user string) manifest.External {
	kind := manifest.ExternalPending
	switch r.Kind {
	case "ConfigMap":
		kind = manifest.ExternalPendingConfigMap
	case "Secret":
		kind = manifest.ExternalPendingSecret
	}
	return manifest.External{Kind: kind, User: r.ns() + "/" + r.Name, Name: r.Name, URL: user}
}

// lookupExported finds the ConfigMap or Secret of r among the exports;
// secret says which it found.
func lookupExported(exported ExportedData, r Ref) (data map[string]string, secret, ok bool) {
	if r.Kind == "" || r.Kind == "ConfigMap" {
		if d, ok := exported(false, r.ns(), r.Name); ok {
			return d, false, true
		}
	}
	if r.Kind == "" || r.Kind == "Secret" {
		if d, ok := exported(true, r.ns(), r.Name); ok {
			return d, true, true
		}
	}
	return nil, false, false
}
