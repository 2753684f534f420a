// Package manifest holds the parsed objects of a revision: Object (one
// Kubernetes-style document with the file and line it came from) and
// Snapshot (every object gitaso read at one revision), with the helpers that
// read a ConfigMap's or Secret's values, and SecretValue: a value a
// renderer took from a Secret, which the object carries so that it is masked
// wherever it lands.
//
// It is a leaf: it imports only the standard library and internal/diag, so
// that the planner can take a Snapshot without reaching Git, the renderers
// or the state store (see architecture_test.go at the repository root for
// the import rules).
package manifest
