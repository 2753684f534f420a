package schemacheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/diag"
)

// Doc is one YAML document of a repository.
type Doc struct {
	File    string         // slash path relative to the directory given to ReadDir
	Line    int            // 1-based line where the document's content starts
	Content map[string]any // the decoded document
}

// APIVersion returns the document's apiVersion ("" when absent or not a string).
func (d Doc) APIVersion() string { s, _ := d.Content["apiVersion"].(string); return s }

// Kind returns the document's kind.
func (d Doc) Kind() string { s, _ := d.Content["kind"].(string); return s }

// Group returns the API group of apiVersion ("" for the core group, as in "v1").
func (d Doc) Group() string {
	g, _, ok := strings.Cut(d.APIVersion(), "/")
	if !ok {
		return ""
	}
	return g
}

// Version returns the version part of apiVersion.
func (d Doc) Version() string {
	av := d.APIVersion()
	if i := strings.LastIndexByte(av, '/'); i >= 0 {
		return av[i+1:]
	}
	return av
}

// Name returns metadata.name.
func (d Doc) Name() string { s, _ := d.meta()["name"].(string); return s }

// Namespace returns metadata.namespace, "default" when it is empty.
func (d Doc) Namespace() string {
	if s, _ := d.meta()["namespace"].(string); s != "" {
		return s
	}
	return "default"
}

// Annotations returns metadata.annotations with string values.
func (d Doc) Annotations() map[string]string {
	out := map[string]string{}
	a, _ := d.meta()["annotations"].(map[string]any)
	for k, v := range a {
		if s, ok := v.(string); ok {
			out[k] = s
		}
	}
	return out
}

// Spec returns the spec object, nil when absent.
func (d Doc) Spec() map[string]any { s, _ := d.Content["spec"].(map[string]any); return s }

// ID returns "namespace/Kind/name".
func (d Doc) ID() string { return d.Namespace() + "/" + d.Kind() + "/" + d.Name() }

func (d Doc) meta() map[string]any { m, _ := d.Content["metadata"].(map[string]any); return m }

// ReadFile parses every non-empty document of one multi-document YAML file.
// Parse errors are returned as a diag.List naming the file.
func ReadFile(name string, data []byte) ([]Doc, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []Doc
	for {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, diag.List{{File: name, Msg: "invalid YAML", Err: err}}
		}
		if len(node.Content) == 0 {
			continue
		}
		line := node.Content[0].Line
		var m map[string]any
		if err := node.Decode(&m); err != nil {
			return docs, diag.List{{File: name, Line: line, Msg: "document is not a mapping", Err: err}}
		}
		if m == nil {
			continue
		}
		docs = append(docs, Doc{File: name, Line: line, Content: m})
	}
}

// ReadDir parses every *.yaml and *.yml file below root (skipping directories whose name starts
// with a dot), in lexical order. File names in the result are slash paths relative to root.
func ReadDir(root string) ([]Doc, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(p); ext == ".yaml" || ext == ".yml" {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("walk %s: %w", root, err)
	}
	sort.Strings(files)
	var docs []Doc
	var errs diag.List
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read manifest: %w", err)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, fmt.Errorf("relative path of %s: %w", p, err)
		}
		d, err := ReadFile(filepath.ToSlash(rel), data)
		docs = append(docs, d...)
		errs = append(errs, diag.AsList(err)...)
	}
	return docs, errs.Err()
}
