// Package schemacheck is a test helper that checks ASO manifests against the facts catalog in
// ../shared/aso-schema (kinds.json and schema/<group>/<version>.json) without any of gitaso's
// own planner code, so that the example repository (examples/) and the generated benchmark
// repositories (internal/benchdata) can be proved well-formed independently of the code they
// are used to test.
//
// It checks, for every document: apiVersion/kind known to ASO, every spec field known with its
// exact casing (recursively, with a suggestion when only the case differs), scalar types, enum
// values, required fields, the shape of references/secrets/config maps; and, across documents:
// owners and references by name resolve to an object of the right kind in the same namespace,
// SecretReferences resolve to a key of a Secret in the same namespace, *FromConfig values
// resolve to a ConfigMap in the repository or to an operatorSpec.configMaps export of the same
// namespace, and no object is declared twice.
//
//	cat, err := schemacheck.Load("../shared/aso-schema")
//	docs, err := schemacheck.ReadDir("examples")
//	if errs := cat.Check(docs); len(errs) > 0 { ... } // a diag.List naming file, line, object and field
//
// It is a stop-gap until `gitaso validate` exists; it lives under internal/benchdata because
// that is where generated manifests come from.
package schemacheck
