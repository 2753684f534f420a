package asosrc

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
)

// indexDir is where ASO's reference docs keep one _index.md per group.
const indexDir = "docs/hugo/content/reference"

// sampleURLPrefix is cut from the Sample links of the index tables, leaving
// the sample's path in ASO's repository (v2/samples/...).
const sampleURLPrefix = "https://github.com/Azure/azure-service-operator/tree/main/"

// indexSections maps the index's table headings to a kind's status.
var indexSections = map[string]string{
	"Latest Released Versions": "latest",
	"Other Supported Versions": "supported",
	"Released":                 "released",
	"Deprecated":               "deprecated",
	"Next Release":             "next",
}

// indexRow is one row of a group's _index.md table.
type indexRow struct {
	group, version, kind string
	status, from, sample string
	file                 string // for messages
	line                 int
}

// indexLink matches the Resource cell of a row: [Kind]({{< relref "..." >}}),
// or before v2.11 [Kind](https://azure.github.io/...).
var indexLink = regexp.MustCompile(`^\[([A-Za-z0-9]+)\]\(.+\)$`)

// viewLink matches the Sample cell: [View](URL).
var viewLink = regexp.MustCompile(`^\[View\]\(([^)]*)\)$`)

// readIndex reads every docs/hugo/content/reference/<dir>/_index.md of the
// tree. A row whose Resource cell is not a link to the kind's reference page
// is not read: ASO's docs generator writes such a row for a version whose
// page it has not generated (appconfiguration v20220501 at the pinned
// commit), and the former extractor, whose facts the catalog must reproduce,
// left those kinds unlisted.
func readIndex(fsys fs.FS) ([]indexRow, error) {
	files, err := fs.Glob(fsys, indexDir+"/*/_index.md")
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", indexDir, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no %s/<group>/_index.md (is this an ASO source tree?)", indexDir)
	}
	sort.Strings(files)
	var rows []indexRow
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f, err)
		}
		r, err := parseIndex(f, path.Base(path.Dir(f))+".azure.com", b)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r...)
	}
	return rows, nil
}

// parseIndex reads the tables of one group's _index.md.
func parseIndex(file, group string, b []byte) ([]indexRow, error) {
	var rows []indexRow
	status := ""
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if h, ok := strings.CutPrefix(line, "### "); ok {
			st, known := indexSections[strings.TrimSpace(h)]
			if !known {
				return nil, fmt.Errorf("%s:%d: unknown section %q (known: Latest Released Versions, Other Supported Versions, Released, Deprecated, Next Release)", file, n, h)
			}
			status = st
			continue
		}
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		m := indexLink.FindStringSubmatch(cells[0])
		if m == nil {
			continue // the header, the rule under it, or an unlinked row
		}
		if len(cells) != 5 {
			return nil, fmt.Errorf("%s:%d: row of kind %s has %d cells, want 5 (Resource, ARM Version, CRD Version, Supported From, Sample)", file, n, m[1], len(cells))
		}
		if status == "" {
			return nil, fmt.Errorf("%s:%d: row of kind %s before any ### section", file, n, m[1])
		}
		row := indexRow{group: group, kind: m[1], version: cells[2], status: status, from: cells[3], file: file, line: n}
		if v := viewLink.FindStringSubmatch(cells[4]); v != nil {
			row.sample = strings.TrimPrefix(v[1], sampleURLPrefix)
		}
		if row.version == "" {
			return nil, fmt.Errorf("%s:%d: kind %s has no CRD version", file, n, row.kind)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return rows, nil
}
