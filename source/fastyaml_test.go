package source

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"

	"github.com/gitaso/gitaso/internal/benchdata"
)

// yamlv3Documents decodes a stream with yaml.v3's Decoder, nil for an empty
// document, as parseText sees it.
func yamlv3Documents(data []byte) ([]*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, err
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null" {
			docs = append(docs, nil)
			continue
		}
		docs = append(docs, &doc)
	}
}

// sameNodes compares what the parser and the meter read of two node trees;
// "" when they agree, else where they differ.
func sameNodes(path string, a, b *yaml.Node) string {
	switch {
	case a == nil && b == nil:
		return ""
	case a == nil || b == nil:
		return fmt.Sprintf("%s: %v vs %v", path, a, b)
	}
	if a.Kind != b.Kind || a.Style != b.Style || a.Tag != b.Tag || a.ShortTag() != b.ShortTag() || a.Value != b.Value ||
		a.Line != b.Line || a.Column != b.Column || a.Anchor != b.Anchor || (a.Alias == nil) != (b.Alias == nil) || len(a.Content) != len(b.Content) {
		return fmt.Sprintf("%s: fast {kind %d style %d tag %q value %q at %d:%d, %d children} vs yaml.v3 {kind %d style %d tag %q value %q at %d:%d, %d children}",
			path, a.Kind, a.Style, a.Tag, a.Value, a.Line, a.Column, len(a.Content), b.Kind, b.Style, b.Tag, b.Value, b.Line, b.Column, len(b.Content))
	}
	for i := range a.Content {
		if d := sameNodes(fmt.Sprintf("%s/%d", path, i), a.Content[i], b.Content[i]); d != "" {
			return d
		}
	}
	return ""
}

// checkFast fails when fastDocuments accepts data and reads it otherwise
// than yaml.v3; it reports whether fastDocuments accepted it.
func checkFast(t *testing.T, name string, data []byte) bool {
	t.Helper()
	fast, ok := fastDocuments(data)
	if !ok {
		return false
	}
	slow, err := yamlv3Documents(data)
	if err != nil {
		t.Errorf("%s: fastDocuments accepts what yaml.v3 refuses (%v):\n%s", name, err, data)
		return true
	}
	if len(fast) != len(slow) {
		t.Errorf("%s: %d documents, yaml.v3 reads %d:\n%s", name, len(fast), len(slow), data)
		return true
	}
	for i := range fast {
		if d := sameNodes(fmt.Sprintf("doc %d", i), fast[i], slow[i]); d != "" {
			t.Errorf("%s: %s\n%s", name, d, data)
			return true
		}
	}
	return true
}

// fastCases are texts at the edges of fastDocuments' subset; want is
// whether it reads them itself.
var fastCases = []struct {
	text string
	want bool
}{
	{"", true},
	{"# only a comment\n", true},
	{"---\n", true},
	{"---\n---\n# c\n", true},
	{"a: 1\n---\n", true},
	{"# head\n---\na: 1\n---\n---\nb: 2\n", true},
	{"a: 1", true},
	{"a:\n", true},
	{"a:\nb: 2\n", true},
	{"a:\n  b:\n  c: 1\n", true},
	{"a:\n  b:\nc:\n", true},
	{"a:\n- x\n-\n- y\nb: 2\n", true},
	{"a:\n  - x\n  -\n  - 'y'\n", true},
	{"- a\n- b: 1\n  c: 2\n-\n  d: 3\n- - e\n  - f\n", true},
	{"-   a: 1\n    b: 2\n- c\n", true},
	{"a:\n- b: 1\n  c:\n  - d\n  e: f\nz: 1\n", true},
	{"  a: 1\n  b: 2\n", true},
	{"a: \"x y\"\nb: 'it''s'\nc: ''\nd: \"\"\n", true},
	{"a: []\nb: {}\nc:\n  - []\n", true},
	{"a: true\nb: no\nc: 0x1F\nd: 0755\ne: 1e3\nf: .inf\ng: ~\nh: null\ni: 2001-12-14\nj: -1\nk: 1_000\nl: +1\n", true},
	{"1: a\ntrue: b\n1.5: c\n", true},
	{"a: [x\nb: True\nc: FALSE\nd: Null\ne: NULL\nf: yes\ng: Off\nh: y\ni: _x\nj: /p\nk: $x\nl: =\nm: <<\n", false},
	{"b: True\nc: FALSE\nd: Null\ne: NULL\nf: yes\ng: Off\nh: y\ni: _x\nj: /p\nk: $x\nl: =\nm: <<\nn: nULL\no: tRUE\n", true},
	{"a: b:c\nurl: https://example.com/x?y=1&z=2\n", true},
	{"a: x # comment\n", false},
	{"a: x\n  y\n", false},
	{"a: &x 1\nb: *x\n", false},
	{"a: !!str 1\n", false},
	{"a: |\n  x\n", false},
	{"a: >\n  x\n", false},
	{"a: [1, 2]\n", false},
	{"a: {b: 1}\n", false},
	{"\"a\": 1\n", false},
	{"a: \"x\\ny\"\n", false},
	{"a: \"x\n  y\"\n", false},
	{"a:\tb\n", false},
	{"a: b\r\n", false},
	{"a: é\n", false},
	{"%YAML 1.2\n---\na: 1\n", false},
	{"a: 1\n...\n", false},
	{"--- a: 1\n", false},
	{"a: 1\n b: 2\n", false},
	{"a: 1\n- b\n", false},
	{"<<: {a: 1}\n", false},
	{"null: 1\n", false},
	{"just a scalar\n", false},
	{"a: b: c\n", false},
	{"a: -\n", false},
	{"a:\n  ---\n", false},
	{"a: 1\na: 2\n", true}, // duplicate keys are the parser's to refuse
	{"a:\n    b: 1\n  c: 2\n", false},
}

func TestFastDocumentsMatchYAMLv3(t *testing.T) {
	for _, c := range fastCases {
		if got := checkFast(t, fmt.Sprintf("%q", c.text), []byte(c.text)); got != c.want {
			t.Errorf("fastDocuments(%q) reads it itself: %v, want %v", c.text, got, c.want)
		}
	}
}

// TestFastDocumentsCorpus reads every YAML file of the repository and of
// the shared conformance data with both parsers, and the generated
// benchmark repository, which must be within the subset entirely.
func TestFastDocumentsCorpus(t *testing.T) {
	roots := []string{".."}
	if d := os.Getenv("GITASO_SHARED"); d != "" {
		roots = append(roots, d)
	}
	var read, fast int
	for _, root := range roots {
		err := filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if e.IsDir() && p != root && (strings.HasPrefix(e.Name(), ".") || e.Name() == "node_modules") {
				return filepath.SkipDir
			}
			if e.IsDir() || !IsYAMLFile(e.Name()) {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil || len(data) > 4<<20 {
				return nil
			}
			read++
			if checkFast(t, p, data) {
				fast++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d of %d YAML files read by fastDocuments", fast, read)

	dir := t.TempDir()
	if err := benchdata.Generate(dir, 3, 20, "00000000-0000-0000-0000-000000000000"); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !checkFast(t, p, data) {
			t.Errorf("%s: generated manifests are not read by fastDocuments", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestParseFileFastSame checks that ParseFile gives the same objects and
// errors through fastDocuments as through yaml.v3 alone.
func TestParseFileFastSame(t *testing.T) {
	texts := []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    x:\ndata:\n  k: 1\n  n:\n",
		"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n  stringData:\n    a: b\n- 3\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
		"---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  annotations:\n    a: 1\nspec:\n  location: westeurope\n",
		"a: 1\n---\n- x\n",
	}
	for _, c := range fastCases {
		texts = append(texts, c.text)
	}
	for _, text := range texts {
		fastObjs, fastNodes, fastErr := parseTextWith("f.yaml", []byte(text), DefaultLimits(), false, true)
		slowObjs, slowNodes, slowErr := parseTextWith("f.yaml", []byte(text), DefaultLimits(), false, false)
		if !cmp.Equal(fastObjs, slowObjs) || fastNodes != slowNodes || fmt.Sprint(fastErr) != fmt.Sprint(slowErr) {
			t.Errorf("%q:\nfast: %v %d %v\nyaml.v3: %v %d %v", text, fastObjs, fastNodes, fastErr, slowObjs, slowNodes, slowErr)
		}
	}
}

// FuzzFastDocuments checks that whatever fastDocuments reads, yaml.v3
// reads the same.
func FuzzFastDocuments(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.text))
	}
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		f.Add(mustRead(f, s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFast(t, "input", data)
	})
}
