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

	"github.com/gitaso/gitaso/harness/benchdata"
)

// fastDoc is one document as parseText sees it: its index in the stream,
// its root converted and the root's line.
type fastDoc struct {
	Index int
	Root  any
	Line  int
}

// slowDocuments reads data's documents as parseText does with yaml.v3
// (the meter, then the parser's conversion); err for any problem.
func slowDocuments(data []byte, lim Limits) (docs []fastDoc, nodes int64, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	m := newMeter("f.yaml", lim, nil)
	p := parser{file: "f.yaml", max: lim.MaxNodes}
	for index := 0; ; index++ {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, m.nodes, nil
			}
			return nil, 0, err
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].ShortTag() == "!!null" {
			continue
		}
		if e := m.document(&doc); e != nil {
			return nil, 0, e
		}
		v := p.value(doc.Content[0])
		if len(p.errs) > 0 {
			return nil, 0, p.errs
		}
		docs = append(docs, fastDoc{index, v, doc.Content[0].Line})
	}
}

// checkFast fails when fastDocuments accepts data and reads it otherwise
// than yaml.v3 and the parser; it reports whether fastDocuments accepted
// it.
func checkFast(t *testing.T, name string, data []byte, lim Limits) bool {
	t.Helper()
	var fast []fastDoc
	nodes, ok := fastDocuments(data, lim, func(index int, root map[string]any, line int) bool {
		fast = append(fast, fastDoc{index, root, line})
		return true
	})
	if !ok {
		return false
	}
	slow, slowNodes, err := slowDocuments(data, lim)
	if err != nil {
		t.Errorf("%s: fastDocuments accepts what yaml.v3 and the parser refuse (%v):\n%s", name, err, data)
		return true
	}
	if d := cmp.Diff(slow, fast); d != "" || nodes != slowNodes {
		t.Errorf("%s: fastDocuments reads %d nodes, yaml.v3 %d; documents (-yaml.v3 +fast):\n%s\n%s", name, nodes, slowNodes, d, data)
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
	{"l:\n- a\n- b: 1\n  c: 2\n-\n  d: 3\n- - e\n  - f\n", true},
	{"l:\n  -   a: 1\n      b: 2\n  - c\n", true},
	{"a:\n- b: 1\n  c:\n  - d\n  e: f\nz: 1\n", true},
	{"  a: 1\n  b: 2\n", true},
	{"a: \"x y\"\nb: 'it''s'\nc: ''\nd: \"\"\n", true},
	{"a: []\nb: {}\nc:\n  - []\n", true},
	{"a: true\nb: no\nc: 0x1F\nd: 0755\ne: 1e3\nf: .5\ng: ~\nh: null\ni: 2001-12-14\nj: -1\nk: 1_000\nl: +1\n", true},
	{"1: a\ntrue: b\n1.5: c\n", true},
	{"a: [x\nb: True\nc: FALSE\nd: Null\ne: NULL\nf: yes\ng: Off\nh: y\ni: _x\nj: /p\nk: $x\nl: =\nm: <<\n", false},
	{"b: True\nc: FALSE\nd: Null\ne: NULL\nf: yes\ng: Off\nh: y\ni: _x\nj: /p\nk: $x\nl: =\nm: <<\nn: nULL\no: tRUE\n", true},
	{"a: b:c\nurl: https://example.com/x?y=1&z=2\n", true},
	{"a: x # comment\n", false},
	{"a: .inf\n", false}, // the parser refuses it
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
	{"- a\n", false},
	{"a:\n  b: [x]\n", false},
	{"a: 1\n---\n- x\n", false},
	{"<<: {a: 1}\n", false},
	{"null: 1\n", false},
	{"just a scalar\n", false},
	{"a: b: c\n", false},
	{"a: -\n", false},
	{"a:\n  ---\n", false},
	{"a: 1\na: 2\n", false}, // the parser refuses duplicate keys, with their lines
	{"a:\n    b: 1\n  c: 2\n", false},
}

func TestFastDocumentsMatchYAMLv3(t *testing.T) {
	for _, c := range fastCases {
		if got := checkFast(t, fmt.Sprintf("%q", c.text), []byte(c.text), DefaultLimits().WithDefaults()); got != c.want {
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
			if checkFast(t, p, data, DefaultLimits().WithDefaults()) {
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
		if _, _, ok := fastParse(p, data, DefaultLimits().WithDefaults()); !ok {
			t.Errorf("%s: generated manifests are not read by fastParse", p)
		}
		checkFast(t, p, data, DefaultLimits().WithDefaults())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// parseCases are whole files for TestParseFileFastSame.
var parseCases = []string{
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels:\n    x:\ndata:\n  k: 1\n  n:\n",
	"apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Secret\n  metadata:\n    name: s\n  stringData:\n    a: b\n- 3\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  annotations:\n    n: 1\n",
	"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  namespace: 5\n",
	"---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg\n  annotations:\n    a: \"1\"\nspec:\n  location: westeurope\n  tags:\n    n: 0x10\n    f: 1.5e3\n    b: True\n    t: 2001-12-14\n    i: -12\n---\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k:\n  l: []\n  m: {}\n",
	"a: 1\n---\n- x\n",
}

// sameParse fails when ParseFile's answer for text differs with fastParse
// and without it.
func sameParse(t *testing.T, text string, lim Limits) {
	t.Helper()
	fastObjs, fastNodes, fastErr := parseTextWith("f.yaml", []byte(text), lim, false, true)
	slowObjs, slowNodes, slowErr := parseTextWith("f.yaml", []byte(text), lim, false, false)
	if d := cmp.Diff(slowObjs, fastObjs); d != "" || fastNodes != slowNodes || fmt.Sprint(fastErr) != fmt.Sprint(slowErr) {
		t.Errorf("%q: ParseFile differs with fastParse: nodes %d vs %d, errors %v vs %v; objects (-yaml.v3 +fast):\n%s",
			text, slowNodes, fastNodes, slowErr, fastErr, d)
	}
}

// TestParseFileFastSame checks that ParseFile gives the same objects, node
// count and errors with fastParse as with yaml.v3 alone.
func TestParseFileFastSame(t *testing.T) {
	texts := append([]string(nil), parseCases...)
	for _, c := range fastCases {
		texts = append(texts, c.text)
	}
	for _, text := range texts {
		sameParse(t, text, DefaultLimits().WithDefaults())
		sameParse(t, text, Limits{MaxNodes: 12, MaxDepth: 2}.WithDefaults())
	}
}

// FuzzFastParse checks that whatever fastDocuments reads, yaml.v3 and the
// parser read the same, and that ParseFile gives the same answer with and
// without it (objects, node count, errors), with the default limits and
// small ones.
func FuzzFastParse(f *testing.F) {
	for _, c := range fastCases {
		f.Add([]byte(c.text))
	}
	for _, text := range parseCases {
		f.Add([]byte(text))
	}
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		f.Add(mustRead(f, s))
	}
	small := Limits{MaxNodes: 40, MaxDepth: 3}.WithDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lim := range []Limits{DefaultLimits().WithDefaults(), small} {
			checkFast(t, "input", data, lim)
			sameParse(t, string(data), lim)
		}
	})
}
