package asosrc

import (
	"fmt"
	"io/fs"
	"os"
	"sort"
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
	// Warnings are findings a reviewer should read (see KindsResult.Warnings).
	Warnings []string
}

// Paths lists the facts' files, sorted.
func (f *Facts) Paths() []string {
	out := make([]string, 0, len(f.Files))
	for p := range f.Files {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Extract reads the ASO source tree at root and returns its facts.
func Extract(root string, prov Provenance) (*Facts, error) {
	f, err := ExtractFS(os.DirFS(root), prov)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", root, err)
	}
	return f, nil
}

// ExtractFS reads the facts of an ASO source tree held by fsys (a checkout,
// or a commit's tree read from ASO's Git repository): the kinds (KindsFS),
// the schema of every generated API package (SchemasFS) and the exceptions
// gathered from them (Exceptions), with provenance.json from prov.
func ExtractFS(fsys fs.FS, prov Provenance) (*Facts, error) {
	if prov.Source == "" || prov.License == "" || prov.Commit == "" || prov.CommitDate == "" {
		return nil, fmt.Errorf("provenance incomplete (source, license, commit and commit date are all needed): %+v", prov)
	}
	kinds, err := KindsFS(fsys)
	if err != nil {
		return nil, fmt.Errorf("kinds: %w", err)
	}
	schemas, err := SchemasFS(fsys)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	f := &Facts{Files: map[string][]byte{}, Warnings: kinds.Warnings}
	for _, s := range schemas {
		b, err := s.JSON()
		if err != nil {
			return nil, err
		}
		f.Files[s.Path()] = b
	}
	if err := checkKindsHaveSchemas(kinds.Kinds, f.Files); err != nil {
		return nil, err
	}
	ex, err := Exceptions(schemas).JSON()
	if err != nil {
		return nil, err
	}
	f.Files["exceptions.json"] = ex
	f.Files["kinds.json"] = KindsJSON(kinds.Kinds)
	f.Files["provenance.json"] = ProvenanceJSON(prov, len(kinds.Kinds), len(schemas), kinds.Unlisted)
	return f, nil
}

// checkKindsHaveSchemas makes sure the two halves read the same packages:
// every generated kind's schema file exists.
func checkKindsHaveSchemas(kinds []Kind, files map[string][]byte) error {
	for _, k := range kinds {
		if !k.Generated {
			continue
		}
		p := "schema/" + k.Group + "/" + k.CRDVersion + ".json"
		if _, ok := files[p]; !ok {
			return fmt.Errorf("kind %s %s %s: generated, but no API package with ARM payload types gives %s", k.Group, k.CRDVersion, k.Kind, p)
		}
	}
	return nil
}
