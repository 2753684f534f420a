package source

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// LocateFields moves each error about a field of an object from the object's
// first line to the line of the field (or of its deepest ancestor present,
// for a missing field), reading the object's file from texts (see
// manifest.Snapshot.Texts). Errors of files not in texts, without a field,
// or already on another line than an object's first stay as they are.
func LocateFields(errs diag.List, texts manifest.Texts) {
	if texts == nil {
		return
	}
	byFile := map[string][]*diag.Error{}
	for _, e := range errs {
		if e.Field != "" && e.Line > 0 {
			byFile[e.File] = append(byFile[e.File], e)
		}
	}
	for file, es := range byFile {
		text := texts.Text(file)
		if text == nil {
			continue
		}
		roots := objectRoots(text)
		for _, e := range es {
			if root := roots[e.Line]; root != nil {
				if l := fieldLine(root, e.Field); l > 0 {
					e.Line = l
				}
			}
		}
	}
}

// objectRoots decodes a file's documents and returns the mapping of each
// object by its first line (List items by theirs), as parseText lines them.
func objectRoots(data []byte) map[int]*yaml.Node {
	roots := map[int]*yaml.Node{}
	if int64(len(data)) > DefaultLimits().MaxFileSize {
		return roots
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if !errors.Is(err, io.EOF) {
				return roots // the objects before a syntax error keep their lines
			}
			return roots
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		roots[root.Line] = root
		for _, it := range listItemNodes(root) {
			if it.Kind == yaml.MappingNode {
				roots[it.Line] = it
			}
		}
	}
}

// fieldLine follows a dotted field path ("spec.owner.name",
// "spec.rules[2].name", "metadata.annotations.serviceoperator.azure.com/x":
// keys may hold dots, the longest matching key wins) from a mapping and
// returns the line of the deepest key or item found, 0 when not even the
// first segment is there.
func fieldLine(n *yaml.Node, path string) int {
	line := 0
	for path != "" {
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		switch {
		case strings.HasPrefix(path, "["):
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return line
			}
			if n.Kind == yaml.MappingNode { // a map's key: spec.tags[team]
				found := false
				for i := 0; i+1 < len(n.Content) && !found; i += 2 {
					if found = n.Content[i].Value == path[1:end]; found {
						line, n = n.Content[i].Line, n.Content[i+1]
					}
				}
				if !found {
					return line
				}
				path = strings.TrimPrefix(path[end+1:], ".")
				continue
			}
			if n.Kind != yaml.SequenceNode {
				return line
			}
			i, err := strconv.Atoi(path[1:end])
			if err != nil || i < 0 || i >= len(n.Content) {
				return line
			}
			n = n.Content[i]
			line = n.Line
			path = strings.TrimPrefix(path[end+1:], ".")
		case n.Kind == yaml.MappingNode:
			best := -1
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := n.Content[i].Value
				if k == "" || !strings.HasPrefix(path, k) {
					continue
				}
				if rest := path[len(k):]; rest != "" && rest[0] != '.' && rest[0] != '[' {
					continue
				}
				if best < 0 || len(k) > len(n.Content[best].Value) {
					best = i
				}
			}
			if best < 0 {
				return line
			}
			k := n.Content[best]
			line = k.Line
			n = n.Content[best+1]
			path = strings.TrimPrefix(path[len(k.Value):], ".")
		default:
			return line
		}
	}
	return line
}

// DropReported removes from errs the errors about a field (after
// LocateFields) on a line of reported ("file:line", see
// RevisionError.Reported): they follow from the problem reported there.
func DropReported(errs diag.List, reported []string) diag.List {
	if len(reported) == 0 {
		return errs
	}
	var out diag.List
	for _, e := range errs {
		if e.Field != "" && e.Line > 0 && slices.Contains(reported, e.File+":"+strconv.Itoa(e.Line)) {
			continue
		}
		out = append(out, e)
	}
	return out
}
