package asosrc

import (
	"fmt"
)

// Provenance names the ASO source the facts come from. It is written to
// provenance.json and into the catalog.
type Provenance struct {
	Source     string // e.g. https://github.com/Azure/azure-service-operator
	License    string // MIT
	Commit     string // the full commit hash of the tree
	CommitDate string // the commit date, RFC 3339 (as git's %cI prints it)
}

// Facts are the files of a facts directory, by slash-separated path relative
// to it: "kinds.json", "provenance.json", "exceptions.json" and
// "schema/<group>/<version>.json".
type Facts struct {
	Files map[string][]byte
}

// Package is one generated API package, v2/api/<dir>/<version>.
type Package struct {
	Group   string // the API group, e.g. storage.azure.com
	Version string // the CRD version, e.g. v1api20230101
	Dir     string // the package directory, relative to the tree's root, slash-separated
}

// Extract reads the ASO source tree at root and returns its facts.
func Extract(root string, prov Provenance) (*Facts, error) {
	return nil, fmt.Errorf("asosrc: extract %s: not implemented yet", root)
}
