package planner_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
)

// corpusDir holds the invalid-manifest corpus: one directory per case with
// the case's *.yaml files and errors.golden, the exact error text gitaso
// reports for it (diag.List sorted, one error per line). A case whose
// directory holds a KNOWN_GAP file documents a mistake gitaso does not
// report correctly yet; it is skipped with the gap's first line.
const corpusDir = "testdata/invalid"

// corpusSub is the global credential's subscription for every case.
const corpusSub = "00000000-0000-0000-0000-000000000000"

// corpusMin is the number of cases issue 4 asks for.
const corpusMin = 40

// TestInvalidCorpus validates every case of the corpus the way a plan does
// (source, then planner.Build) and compares the errors with the case's
// golden file. Every case must be refused, and every error must name the
// file of the case it points at and, once the document could be read, the
// object it belongs to. go test -update rewrites the golden files.
func TestInvalidCorpus(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}
	var cases, gaps int
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(corpusDir, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "KNOWN_GAP")); err == nil {
			gaps++
		} else {
			cases++
		}
		t.Run(e.Name(), func(t *testing.T) { runCorpusCase(t, dir) })
	}
	t.Logf("invalid corpus: %d cases checked, %d known gaps skipped", cases, gaps)
	if cases < corpusMin {
		t.Errorf("corpus has %d passing cases, want at least %d", cases, corpusMin)
	}
}

func runCorpusCase(t *testing.T, dir string) {
	if gap, err := os.ReadFile(filepath.Join(dir, "KNOWN_GAP")); err == nil {
		// Show what gitaso reports today, then skip: the gap file says
		// what it should report.
		errs, _ := corpusErrors(t, dir)
		if len(errs) == 0 {
			t.Log("currently accepted (no error)")
		}
		for _, e := range errs.Sorted() {
			t.Logf("currently: %s", e)
		}
		first, _, _ := strings.Cut(strings.TrimSpace(string(gap)), "\n")
		t.Skipf("KNOWN_GAP: %s", first)
	}
	files := caseFiles(t, dir)
	if len(files) == 0 {
		t.Fatalf("%s has no *.yaml files", dir)
	}

	errs, stage := corpusErrors(t, dir)
	if len(errs) == 0 {
		t.Fatalf("the case was accepted: the mistake is not caught")
	}
	var b strings.Builder
	for _, e := range errs.Sorted() {
		line := e.Error()
		if strings.Contains(line, "\n") {
			t.Errorf("error spans several lines: %q", line)
		}
		b.WriteString(line)
		b.WriteByte('\n')
		checkCorpusError(t, e, files, stage)
	}
	got := b.String()

	path := filepath.Join(dir, "errors.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got; go test -update rewrites it):\n%s", path, diff)
	}
}

// corpusErrors runs the case the way `gitaso validate` does (source, then
// the planner, through reconcile.Build) and returns the input errors with the
// stage that reported them.
func corpusErrors(t *testing.T, dir string) (diag.List, string) {
	t.Helper()
	cfg := reconcile.DefaultConfig()
	cfg.SubscriptionID = corpusSub
	_, g, err := reconcile.New(source.NewDir(dir, ""), nil, nil, cfg, nil).Build(t.Context())
	if err == nil {
		if g == nil {
			t.Fatal("Build returned neither a graph nor an error")
		}
		return nil, "planner"
	}
	if g != nil {
		t.Errorf("Build returned a graph together with errors")
	}
	l := diag.AsList(err)
	if l == nil {
		t.Fatalf("Build failed without input errors: %v", err)
	}
	var re *source.RevisionError
	if errors.As(err, &re) {
		return l, "source"
	}
	return l, "planner"
}

// caseFiles reads the case's manifests, keyed by file name.
func caseFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !source.IsYAMLFile(e.Name()) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

var objectIDRE = regexp.MustCompile(`^(?:([^/]+)/)?([A-Za-z0-9]+)/([^/]+)$`)

// checkCorpusError asserts that an error points at something a user can
// find: a file of the case, a line inside it, and the object (declared in
// that file) whenever the document could be read as an object.
func checkCorpusError(t *testing.T, e *diag.Error, files map[string]string, stage string) {
	t.Helper()
	line := e.Error()
	content, ok := files[e.File]
	if !ok {
		t.Errorf("error does not name a file of the case: %q", line)
		return
	}
	if !strings.HasPrefix(line, e.File+":") {
		t.Errorf("error does not start with its file name: %q", line)
	}
	if n := strings.Count(content, "\n") + 1; e.Line > n {
		t.Errorf("line %d is past the end of %s (%d lines): %q", e.Line, e.File, n, line)
	}
	if e.Object == "" {
		// Only the parser may fail to name an object: a syntax error, or a
		// document without kind or name.
		if stage != "source" {
			t.Errorf("planner error without an object: %q", line)
		}
		return
	}
	if !strings.Contains(line, e.Object) {
		t.Errorf("error text does not contain its object %s: %q", e.Object, line)
	}
	m := objectIDRE.FindStringSubmatch(e.Object)
	if m == nil {
		t.Errorf("object %q is not namespace/Kind/name", e.Object)
		return
	}
	kind, name := m[2], m[3]
	if !regexp.MustCompile(`(?m)^kind:\s*`+regexp.QuoteMeta(kind)+`\s*$`).MatchString(content) ||
		!regexp.MustCompile(`(?m)^\s+name:\s*["']?`+regexp.QuoteMeta(name)+`["']?\s*$`).MatchString(content) {
		t.Errorf("object %s is not declared in %s: %q", e.Object, e.File, line)
	}
	if stage == "planner" && e.Line == 0 {
		t.Errorf("planner error without a line: %q", line)
	}
}
