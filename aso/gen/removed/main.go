// Command removed lists the ASO group/version/kinds that a release since
// v2.0.0 shipped and ASO's source at a pinned commit no longer has, and writes
// them to aso/catalog/removed.json, which package aso embeds (aso.LookupRemoved).
//
// Usage (from the repository root; the generator only reads the git directory):
//
//	go run ./aso/gen/removed -git <ASO git dir or checkout> -ref <commit> -out aso/catalog/removed.json
//
// Inputs: ASO's release tags v2.<minor>.<patch> (pre-releases are skipped) and
// the commit -ref. At each of them the generator walks v2/api/<group>/<version>/
// (storage versions and customizations skipped) and reads the kinds from the
// resource method `func (x *Kind) GetType() string` in *_types_gen.go, the
// generated Kubernetes types. ASO's source is MIT licensed; only these names
// and release numbers are kept. The output is deterministic for a given
// repository and -ref.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Removed is one entry of removed.json.
type Removed struct {
	Group        string   `json:"group"`
	Version      string   `json:"version"`
	Kind         string   `json:"kind"`
	LastIn       string   `json:"lastIn"`
	RemovedIn    string   `json:"removedIn"`
	Replacements []string `json:"replacements"`
}

// Output is removed.json.
type Output struct {
	Generator string    `json:"generator"`
	Source    string    `json:"source"`
	License   string    `json:"license"`
	Commit    string    `json:"commit"`
	Releases  []string  `json:"releases"`
	Removed   []Removed `json:"removed"`
}

func main() {
	gitDir := flag.String("git", "", "ASO git directory or checkout")
	ref := flag.String("ref", "", "the ASO commit the catalog is generated from (default HEAD)")
	out := flag.String("out", "aso/catalog/removed.json", "output file")
	source := flag.String("source", "https://github.com/Azure/azure-service-operator", "source named in the output")
	tags := flag.String("tags", "", "comma-separated release tags to compare (default every v2.<minor>.<patch> tag)")
	flag.Parse()
	var only []string
	if *tags != "" {
		only = strings.Split(*tags, ",")
	}
	if err := run(*gitDir, *ref, *out, *source, only); err != nil {
		slog.Error("removed", "err", err)
		os.Exit(1)
	}
}

func run(gitDir, ref, out, source string, tags []string) error {
	if gitDir == "" {
		return errors.New("-git is required")
	}
	repo, err := Open(gitDir)
	if err != nil {
		return err
	}
	o, err := GenerateTags(repo, ref, source, tags)
	if err != nil {
		return err
	}
	b, err := Marshal(o)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	slog.Info("removed", "out", out, "releases", len(o.Releases), "removed", len(o.Removed))
	return nil
}

// Open opens a checkout, or a git directory (bare, with or without a config
// file, as the fetch mirrors are).
func Open(dir string) (*git.Repository, error) {
	if _, err := os.Stat(filepath.Join(dir, "objects")); err == nil {
		st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
		repo, err := git.Open(st, nil)
		if err != nil {
			return nil, fmt.Errorf("open git directory %s: %w", dir, err)
		}
		return repo, nil
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return repo, nil
}

// Marshal writes one entry per line, so a diff shows one kind per line.
func Marshal(o *Output) ([]byte, error) {
	var b strings.Builder
	head := *o
	head.Removed = nil
	h, err := json.Marshal(head)
	if err != nil {
		return nil, err
	}
	b.WriteString(strings.TrimSuffix(string(h), `,"removed":null}`))
	b.WriteString(",\"removed\":[\n")
	for i, r := range o.Removed {
		e, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		b.Write(e)
		if i < len(o.Removed)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return []byte(b.String()), nil
}

var releaseTag = regexp.MustCompile(`^v2\.(\d+)\.(\d+)$`)

type release struct {
	name         string
	minor, patch int
	hash         plumbing.Hash
}

// Generate compares every release tag with ref.
func Generate(repo *git.Repository, ref, source string) (*Output, error) {
	return GenerateTags(repo, ref, source, nil)
}

// GenerateTags is Generate over the release tags named in tags only (all
// of them when tags is empty); a named tag the repository lacks is an error.
func GenerateTags(repo *git.Repository, ref, source string, tags []string) (*Output, error) {
	rels, err := releases(repo)
	if err != nil {
		return nil, err
	}
	if len(tags) > 0 {
		want := map[string]bool{}
		for _, t := range tags {
			want[strings.TrimSpace(t)] = true
		}
		var kept []release
		for _, r := range rels {
			if want[r.name] {
				kept = append(kept, r)
				delete(want, r.name)
			}
		}
		for t := range want {
			return nil, fmt.Errorf("no release tag %s", t)
		}
		rels = kept
	}
	if ref == "" {
		ref = "HEAD"
	}
	h, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", ref, err)
	}
	w := &walker{repo: repo, cache: map[plumbing.Hash][]string{}}
	current, err := w.kinds(*h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref, err)
	}
	type seen struct{ last int }
	found := map[gvk]*seen{}
	for i, r := range rels {
		ks, err := w.kinds(r.hash)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		for k := range ks {
			if current[k] {
				continue
			}
			s := found[k]
			if s == nil {
				s = &seen{}
				found[k] = s
			}
			s.last = i
		}
	}
	o := &Output{Generator: "go run ./aso/gen/removed", Source: source, License: "MIT", Commit: h.String()}
	for _, r := range rels {
		o.Releases = append(o.Releases, r.name)
	}
	for k, s := range found {
		r := Removed{Group: k.g, Version: k.v, Kind: k.k, LastIn: rels[s.last].name}
		if s.last+1 < len(rels) {
			r.RemovedIn = rels[s.last+1].name
		}
		r.Replacements = replacements(current, k)
		o.Removed = append(o.Removed, r)
	}
	sort.Slice(o.Removed, func(i, j int) bool {
		a, b := o.Removed[i], o.Removed[j]
		if a.Group != b.Group {
			return a.Group < b.Group
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Version < b.Version
	})
	return o, nil
}

func releases(repo *git.Repository) ([]release, error) {
	iter, err := repo.Tags()
	if err != nil {
		return nil, fmt.Errorf("tags: %w", err)
	}
	var rels []release
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		name := ref.Name().Short()
		m := releaseTag.FindStringSubmatch(name)
		if m == nil {
			return nil
		}
		c, err := repo.ResolveRevision(plumbing.Revision(ref.Name().String() + "^{commit}"))
		if err != nil {
			return fmt.Errorf("tag %s: %w", name, err)
		}
		minor, _ := strconv.Atoi(m[1])
		patch, _ := strconv.Atoi(m[2])
		rels = append(rels, release{name: name, minor: minor, patch: patch, hash: *c})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 {
		return nil, errors.New("no release tag v2.<minor>.<patch>")
	}
	sort.Slice(rels, func(i, j int) bool {
		if rels[i].minor != rels[j].minor {
			return rels[i].minor < rels[j].minor
		}
		return rels[i].patch < rels[j].patch
	})
	return rels, nil
}

type gvk struct{ g, v, k string }

// replacements are the versions of k's group and kind at the pinned commit, newest first.
func replacements(current map[gvk]bool, k gvk) []string {
	vs := []string{}
	for c := range current {
		if c.g == k.g && c.k == k.k {
			vs = append(vs, c.v)
		}
	}
	sort.Slice(vs, func(i, j int) bool { return versionKey(vs[i]) > versionKey(vs[j]) })
	return vs
}

var versionDate = regexp.MustCompile(`(\d{8})(preview)?$`)

// versionKey orders CRD versions by their API date, a stable version before
// a preview of the same date; "v1" (hand-written) sorts last.
func versionKey(v string) string {
	m := versionDate.FindStringSubmatch(v)
	if m == nil {
		return "0" + v
	}
	p := "1"
	if m[2] != "" {
		p = "0"
	}
	return m[1] + p + v
}

type walker struct {
	repo  *git.Repository
	cache map[plumbing.Hash][]string // version tree → kinds
}

var getType = regexp.MustCompile(`(?m)^func \(\w+ \*(\w+)\) GetType\(\) string`)

// kinds reads every group/version/kind of v2/api at commit h.
func (w *walker) kinds(h plumbing.Hash) (map[gvk]bool, error) {
	c, err := w.repo.CommitObject(h)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", h, err)
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", h, err)
	}
	api, err := root.Tree("v2/api")
	if err != nil {
		return nil, fmt.Errorf("v2/api at %s: %w", h, err)
	}
	out := map[gvk]bool{}
	for _, g := range api.Entries {
		if g.Mode.IsFile() {
			continue
		}
		gt, err := w.repo.TreeObject(g.Hash)
		if err != nil {
			return nil, fmt.Errorf("v2/api/%s: %w", g.Name, err)
		}
		for _, v := range gt.Entries {
			if v.Mode.IsFile() || !strings.HasPrefix(v.Name, "v") || strings.HasSuffix(v.Name, "storage") {
				continue
			}
			ks, err := w.versionKinds(v.Hash, "v2/api/"+g.Name+"/"+v.Name)
			if err != nil {
				return nil, err
			}
			for _, k := range ks {
				out[gvk{g.Name + ".azure.com", v.Name, k}] = true
			}
		}
	}
	return out, nil
}

func (w *walker) versionKinds(h plumbing.Hash, path string) ([]string, error) {
	if ks, ok := w.cache[h]; ok {
		return ks, nil
	}
	t, err := w.repo.TreeObject(h)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var ks []string
	for _, e := range t.Entries {
		if !e.Mode.IsFile() || !strings.HasSuffix(e.Name, "_types_gen.go") {
			continue
		}
		src, err := blob(w.repo, e.Hash)
		if err != nil {
			return nil, fmt.Errorf("%s/%s: %w", path, e.Name, err)
		}
		for _, m := range getType.FindAllStringSubmatch(src, -1) {
			// Before v2.11.0 the ARM payload types (Kind_Spec_ARM, with a
			// GetType method) sat next to the Kubernetes types.
			if !strings.HasSuffix(m[1], "_ARM") {
				ks = append(ks, m[1])
			}
		}
	}
	w.cache[h] = ks
	return ks, nil
}

func blob(repo *git.Repository, h plumbing.Hash) (string, error) {
	b, err := repo.BlobObject(h)
	if err != nil {
		return "", err
	}
	r, err := b.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	return string(data), err
}
