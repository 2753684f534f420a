package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitaso/gitaso/aso/gen/asosrc"
)

// factsSource is where the generator reads the facts files from: a
// directory in the shared layout (-schema) or the facts extracted from ASO's
// source (-aso-src), which have the same files byte for byte.
type factsSource interface {
	read(rel string) ([]byte, error)
	schemaFiles() ([]string, error) // schema/<group>/<version>.json, slash-separated
}

type dirFacts string

func (d dirFacts) read(rel string) ([]byte, error) {
	return os.ReadFile(filepath.Join(string(d), filepath.FromSlash(rel)))
}

func (d dirFacts) schemaFiles() ([]string, error) {
	var files []string
	err := filepath.WalkDir(filepath.Join(string(d), "schema"), func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && strings.HasSuffix(p, ".json") {
			rel, _ := filepath.Rel(string(d), p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

type memFacts map[string][]byte

func (m memFacts) read(rel string) ([]byte, error) {
	b, ok := m[rel]
	if !ok {
		return nil, fmt.Errorf("%s: %w", rel, fs.ErrNotExist)
	}
	return b, nil
}

func (m memFacts) schemaFiles() ([]string, error) {
	var files []string
	for p := range m {
		if strings.HasPrefix(p, "schema/") {
			files = append(files, p)
		}
	}
	return files, nil
}

// extract reads the facts from ASO's source at src. With ref, src is a Git
// repository and the tree of ref is read from it, the commit and its date
// with it. Without, src is a copy of ASO's tree (a checkout or an archive),
// and the commit and date come from prov or else from git: asked in gitDir
// (default src) for ref HEAD. When src is itself a checkout its HEAD must
// be that commit, so the provenance names what was read.
func extract(src, ref, gitDir string, prov asosrc.Provenance) (*asosrc.Facts, error) {
	if fi, err := os.Stat(filepath.Join(src, "v2", "api")); err != nil || !fi.IsDir() {
		if ref == "" {
			ref = "HEAD"
		}
		fsys, commit, date, err := asosrc.GitTree(src, ref)
		if err != nil {
			return nil, fmt.Errorf("-aso-src %s has no v2/api, so it is read as a Git repository: %w", src, err)
		}
		if prov.Commit != "" && prov.Commit != commit {
			return nil, fmt.Errorf("-aso-commit %s, but %s in %s is %s", prov.Commit, ref, src, commit)
		}
		prov.Commit = commit
		if prov.CommitDate == "" {
			prov.CommitDate = date
		}
		return asosrc.ExtractFS(fsys, prov)
	}
	if ref == "" {
		ref = "HEAD"
	}
	if gitDir == "" {
		gitDir = src
		if prov.Commit == "" && !isToplevel(src) {
			// git -C would answer for an enclosing repository (this one,
			// for a copy under it): only a checkout's own Git counts.
			return nil, fmt.Errorf("the commit of -aso-src %s is unknown: it is not a Git checkout; for a plain copy of ASO's tree name the Git directory it came from "+
				"(-aso-git, make ASO_GIT=) or its commit and date (-aso-commit, -aso-commit-date; make ASO_COMMIT= ASO_COMMIT_DATE=), "+
				"or give the Git directory itself as -aso-src", src)
		}
	}
	if prov.Commit == "" {
		c, err := gitOut(gitDir, "rev-parse", "--verify", ref+"^{commit}")
		if err != nil {
			return nil, fmt.Errorf("the commit of -aso-src %s is unknown: for a plain copy of ASO's tree name the Git directory it came from "+
				"(-aso-git, make ASO_GIT=) or its commit and date (-aso-commit, -aso-commit-date; make ASO_COMMIT= ASO_COMMIT_DATE=), "+
				"or give the Git directory itself as -aso-src: %w", src, err)
		}
		prov.Commit = c
	}
	if head, err := gitOut(src, "rev-parse", "--verify", "HEAD^{commit}"); err == nil && isToplevel(src) && head != prov.Commit {
		return nil, fmt.Errorf("-aso-src %s is a checkout at %s, not at %s (%s)", src, head, prov.Commit, ref)
	}
	if prov.CommitDate == "" {
		d, err := gitOut(gitDir, "show", "-s", "--format=%cI", prov.Commit)
		if err != nil {
			return nil, fmt.Errorf("the commit date of %s is unknown: give -aso-commit-date (make ASO_COMMIT_DATE=): %w", prov.Commit, err)
		}
		prov.CommitDate = d
	}
	return asosrc.Extract(src, prov)
}

// isToplevel reports whether dir is the top of a Git work tree (and not a
// plain copy inside some other repository).
func isToplevel(dir string) bool {
	top, err := gitOut(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return false
	}
	a, err1 := filepath.EvalSymlinks(top)
	b, err2 := filepath.EvalSymlinks(dir)
	return err1 == nil && err2 == nil && a == b
}

func gitOut(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git -C %s %s: %w: %s", dir, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// writeFacts writes the facts files under dir, in the -schema layout.
func writeFacts(dir string, f *asosrc.Facts) error {
	for _, p := range f.Paths() {
		fn := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fn), 0o755); err != nil {
			return fmt.Errorf("write facts: %w", err)
		}
		if err := os.WriteFile(fn, f.Files[p], 0o644); err != nil {
			return fmt.Errorf("write facts: %w", err)
		}
	}
	return nil
}

// keptDate is the generation date of the catalog at out when it was made
// from the same facts, so that regenerating from unchanged inputs changes
// nothing; else today (UTC).
func keptDate(out, factsSum string) string {
	today := time.Now().UTC().Format("2006-01-02")
	f, err := os.Open(out)
	if err != nil {
		return today
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return today
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return today
	}
	var old struct {
		Provenance provenanceOut `json:"provenance"`
	}
	if json.Unmarshal(b, &old) != nil || old.Provenance.FactsSHA256 != factsSum || old.Provenance.GeneratedAt == "" {
		return today
	}
	return old.Provenance.GeneratedAt
}
