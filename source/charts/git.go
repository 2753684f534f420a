package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/ignore"
)

// Limits of a chart packaged from Git.
const (
	maxGitChartFiles = 10000
	maxGitChartBytes = 4 * MaxArchiveSize // uncompressed, dependencies excluded
	maxGitClones     = 4                  // clones kept in memory
	maxDepDepth      = 16
)

// DefaultGitBranch is the branch of a GitRepository without spec.ref, as in
// Flux.
const DefaultGitBranch = "master"

// cloneEntry is one clone (URL and commit), kept for the charts of the
// same commit.
type cloneEntry struct {
	mu     sync.Mutex
	tree   *object.Tree
	commit string
}

// gitResolved is what a GitRepository's spec.ref resolved to (persisted
// for offline mode).
type gitResolved struct {
	Commit string `json:"commit"`
	Ref    string `json:"ref,omitempty"`    // the reference to clone; "" for a bare commit
	Pinned bool   `json:"pinned,omitempty"` // spec.ref.commit: exactly this commit
}

// gitSource is a GitRepository being read.
type gitSource struct {
	url  string
	auth transport.AuthMethod
	ca   []byte
}

// fetchGit fetches a chart from another Git repository: spec.ref resolved
// to a commit, the chart directory packaged into a .tgz with its file://
// dependencies (from the same commit) and its repository dependencies
// (fetched) in charts/, as source-controller builds a chart from Git.
func (f *Fetcher) fetchGit(ctx context.Context, req Request) (*Chart, error) {
	spec := req.Source.Spec
	u := specString(spec, "url")
	switch {
	case u == "":
		return nil, fmt.Errorf("%w: spec.url is required", ErrInvalid)
	case strings.HasPrefix(u, "https://"):
	case strings.HasPrefix(u, "http://"):
		f.warnPlainHTTP(u, "Git repository") // as Flux, and as gitaso reads a Kustomization's GitRepository
	case isSSHURL(u): // gitssh.go
	default:
		return nil, fmt.Errorf("%w: spec.url %s: want an https://, http:// or SSH (ssh://, user@host:path) address", ErrUnsupported, redact(u))
	}
	dir := path.Clean(strings.TrimPrefix(strings.TrimSpace(req.Chart), "./"))
	if dir == "." || dir == "/" {
		dir = ""
	}
	dir = strings.TrimPrefix(dir, "/")
	if dir == ".." || strings.HasPrefix(dir, "../") {
		return nil, fmt.Errorf("%w: chart path %q leaves the repository", ErrInvalid, req.Chart)
	}
	g := &gitSource{url: u, ca: f.opts.CABundle}
	if ca, _, _ := tlsMaterial(req.Secret); ca != nil {
		g.ca = append(append(slices.Clone(g.ca), '\n'), ca...)
	}
	switch b, tok := req.Secret["username"] != "" || req.Secret["password"] != "", req.Secret["bearerToken"]; {
	case isSSHURL(u):
		auth, err := sshAuth(u, req.Secret)
		if err != nil {
			return nil, err
		}
		g.auth, g.ca = auth, nil
	case tok != "":
		g.auth = &githttp.TokenAuth{Token: tok}
	case b:
		g.auth = &githttp.BasicAuth{Username: req.Secret["username"], Password: req.Secret["password"]}
	}
	refKey, err := gitRefKey(spec)
	if err != nil {
		return nil, err
	}
	res, err := f.resolveGit(ctx, g, spec, refKey)
	if err != nil {
		return nil, err
	}
	from := redact(u) + "@" + res.Commit + ":" + dir
	chartKey := u + "@" + res.Commit + ":" + dir
	unlock := f.lock("git:" + chartKey)
	defer unlock()
	if b, ok := f.cache.getMeta("gitchart", chartKey); ok {
		if a, ok := f.cache.get(string(b)); ok {
			return f.chartOf(a, string(b), from, true)
		}
	}
	if f.opts.Offline {
		return nil, fmt.Errorf("chart %s: %w", from, ErrOffline)
	}
	root, commit, err := f.clone(ctx, g, res)
	if err != nil {
		return nil, err
	}
	if commit != res.Commit {
		// The reference moved between the listing and the clone.
		from = redact(u) + "@" + commit + ":" + dir
		chartKey = u + "@" + commit + ":" + dir
	}
	archive, err := f.packageGitChart(ctx, root, dir, nil)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", from, err)
	}
	f.n.downloads.Add(1)
	f.n.bytes.Add(int64(len(archive)))
	d := digestOf(archive)
	c, err := f.chartOf(archive, d, from, false)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", from, err)
	}
	if err := f.cache.put(d, archive); err != nil {
		f.log.Warn("chart not cached", "chart", from, "err", err)
	}
	if err := f.cache.putMeta("gitchart", chartKey, []byte(d)); err != nil {
		f.log.Warn("chart not cached", "chart", from, "err", err)
	}
	return c, nil
}

// gitRefKey describes spec.ref for cache keys.
func gitRefKey(spec map[string]any) (string, error) {
	if ref, ok := spec["ref"]; ok && ref != nil {
		if _, ok := ref.(map[string]any); !ok {
			return "", fmt.Errorf("%w: spec.ref must be a mapping", ErrInvalid)
		}
	}
	b, _ := json.Marshal([]string{specString(spec, "ref.commit"), specString(spec, "ref.name"), specString(spec, "ref.semver"),
		specString(spec, "ref.tag"), specString(spec, "ref.branch")})
	return string(b), nil
}

// resolveGit resolves spec.ref to a commit with one reference listing
// (commit, then name, semver, tag, branch, as Flux orders them).
func (f *Fetcher) resolveGit(ctx context.Context, g *gitSource, spec map[string]any, refKey string) (*gitResolved, error) {
	key := g.url + "\x00" + refKey
	commit, name, sv, tag, branch := specString(spec, "ref.commit"), specString(spec, "ref.name"), specString(spec, "ref.semver"), specString(spec, "ref.tag"), specString(spec, "ref.branch")
	if commit != "" {
		if !plumbing.IsHash(commit) {
			return nil, fmt.Errorf("%w: spec.ref.commit %q is not a full commit SHA", ErrInvalid, commit)
		}
		res := &gitResolved{Commit: strings.ToLower(commit), Pinned: true}
		if branch != "" {
			res.Ref = plumbing.NewBranchReferenceName(branch).String()
		}
		return res, nil
	}
	if f.opts.Offline {
		var res gitResolved
		if b, ok := f.cache.getMeta("gitref", key); ok && json.Unmarshal(b, &res) == nil && res.Commit != "" {
			return &res, nil
		}
		return nil, fmt.Errorf("spec.ref of %s: %w (it was never resolved into the cache)", redact(g.url), ErrOffline)
	}
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{g.url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{Auth: g.auth, CABundle: g.ca, PeelingOption: git.AppendPeeled})
	if err != nil {
		return nil, gitError(err, "list references of "+redact(g.url))
	}
	f.n.gitLists.Add(1)
	byName := map[string]string{}
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			byName[r.Name().String()] = r.Hash().String()
		}
	}
	lookup := func(ref string) (*gitResolved, bool) {
		if h, ok := byName[ref+"^{}"]; ok { // an annotated tag, peeled
			return &gitResolved{Commit: h, Ref: ref}, true
		}
		if h, ok := byName[ref]; ok {
			return &gitResolved{Commit: h, Ref: ref}, true
		}
		return nil, false
	}
	var (
		res  *gitResolved
		ok   bool
		what string
	)
	switch {
	case name != "":
		what = fmt.Sprintf("spec.ref.name %q", name)
		res, ok = lookup(name)
	case sv != "":
		what = fmt.Sprintf("spec.ref.semver %q", sv)
		var tags []string
		for n := range byName {
			if t, isTag := strings.CutPrefix(n, "refs/tags/"); isTag && !strings.HasSuffix(t, "^{}") {
				if _, err := semver.NewVersion(t); err == nil {
					tags = append(tags, t)
				}
			}
		}
		t, err := pickVersion(tags, sv)
		if err != nil {
			return nil, fmt.Errorf("%s of %s: %w", what, redact(g.url), err)
		}
		res, ok = lookup("refs/tags/" + t)
	case tag != "":
		what = fmt.Sprintf("spec.ref.tag %q", tag)
		res, ok = lookup("refs/tags/" + tag)
	default:
		if branch == "" {
			branch = DefaultGitBranch
		}
		what = fmt.Sprintf("branch %q", branch)
		res, ok = lookup("refs/heads/" + branch)
	}
	if !ok {
		return nil, fmt.Errorf("%w: %s does not exist in %s", ErrNotFound, what, redact(g.url))
	}
	b, _ := json.Marshal(res)
	if err := f.cache.putMeta("gitref", key, b); err != nil {
		f.log.Warn("Git reference not cached", "url", redact(g.url), "err", err)
	}
	return res, nil
}

// gitError classifies a go-git error.
func gitError(err error, what string) error {
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		return fmt.Errorf("%s: %w: %v", what, ErrAuth, err)
	case errors.Is(err, transport.ErrRepositoryNotFound), errors.Is(err, transport.ErrEmptyRemoteRepository):
		return fmt.Errorf("%s: %w: %v", what, ErrNotFound, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// clone returns the tree of a resolved commit and that commit, cloning
// (into memory, no work tree) once per URL and commit: a reference's tip
// shallowly, a pinned commit with the history of its branch (or of every
// branch).
func (f *Fetcher) clone(ctx context.Context, g *gitSource, res *gitResolved) (*object.Tree, string, error) {
	key := g.url + "@" + res.Commit
	f.mu.Lock()
	e := f.clones[key]
	if e == nil {
		e = &cloneEntry{}
		f.clones[key] = e
		f.cloneOrder = append(f.cloneOrder, key)
		if len(f.cloneOrder) > maxGitClones {
			delete(f.clones, f.cloneOrder[0])
			f.cloneOrder = f.cloneOrder[1:]
		}
	}
	f.mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tree != nil {
		return e.tree, e.commit, nil
	}
	what := "clone " + redact(g.url) + "@" + res.Commit
	opts := &git.CloneOptions{URL: g.url, Auth: g.auth, CABundle: g.ca, Tags: git.NoTags}
	if res.Ref != "" {
		opts.ReferenceName = plumbing.ReferenceName(res.Ref)
		opts.SingleBranch = true
		if !res.Pinned {
			opts.Depth = 1
		}
	}
	start := time.Now()
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, opts)
	if err != nil {
		return nil, "", gitError(err, what)
	}
	f.n.clones.Add(1)
	c, err := repo.CommitObject(plumbing.NewHash(res.Commit))
	if err != nil && !res.Pinned && res.Ref != "" {
		// The reference moved since it was listed: take what was cloned.
		if rh, rerr := repo.ResolveRevision(plumbing.Revision(res.Ref)); rerr == nil {
			c, err = repo.CommitObject(*rh)
		}
	}
	if err != nil {
		where := ""
		if res.Ref != "" {
			where = " on " + res.Ref
		}
		return nil, "", fmt.Errorf("%s: %w: commit %s%s: %v", what, ErrNotFound, res.Commit, where, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", what, err)
	}
	f.log.Debug("Git repository cloned for a chart", "url", redact(g.url), "commit", c.Hash.String(), "duration", time.Since(start))
	e.tree, e.commit = tree, c.Hash.String()
	return e.tree, e.commit, nil
}

// packageGitChart packages the chart in dir of a tree: its files (less
// .helmignore'd ones) and, in charts/, its dependencies not vendored there.
// The archive is deterministic (sorted entries, fixed times), so the same
// chart content always has the same digest.
func (f *Fetcher) packageGitChart(ctx context.Context, root *object.Tree, dir string, stack []string) ([]byte, error) {
	if slices.Contains(stack, dir) {
		return nil, fmt.Errorf("%w: file:// dependencies form a cycle: %s → %s", ErrInvalid, strings.Join(stack, " → "), dir)
	}
	if len(stack) > maxDepDepth {
		return nil, fmt.Errorf("%w: file:// dependencies nest more than %d deep", ErrInvalid, maxDepDepth)
	}
	t := root
	if dir != "" {
		var err error
		if t, err = root.Tree(dir); err != nil {
			return nil, fmt.Errorf("%w: no directory %q in the repository", ErrNotFound, dir)
		}
	}
	files := map[string][]byte{}
	var total int64
	err := t.Files().ForEach(func(fl *object.File) error {
		if fl.Mode != filemode.Regular && fl.Mode != filemode.Executable {
			return nil // symlinks and submodules are not followed
		}
		if len(files) >= maxGitChartFiles {
			return fmt.Errorf("%w: more than %d files", ErrTooLarge, maxGitChartFiles)
		}
		total += fl.Size
		if total > maxGitChartBytes {
			return fmt.Errorf("%w: more than %d bytes of files", ErrTooLarge, maxGitChartBytes)
		}
		s, err := fl.Contents()
		if err != nil {
			return err
		}
		files[fl.Name] = []byte(s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	if _, ok := files["Chart.yaml"]; !ok {
		return nil, fmt.Errorf("%w: %q has no Chart.yaml", ErrNotFound, dir)
	}
	rules := ignore.Empty()
	if b, ok := files[ignore.HelmIgnore]; ok {
		if rules, err = ignore.Parse(bytes.NewReader(b)); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, path.Join(dir, ignore.HelmIgnore), err)
		}
	}
	rules.AddDefaults()
	var buffered []*loader.BufferedFile
	for name, b := range files {
		if HelmIgnored(rules, name) {
			delete(files, name)
			continue
		}
		buffered = append(buffered, &loader.BufferedFile{Name: name, Data: b})
	}
	c, err := loader.LoadFiles(buffered)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, dir, err)
	}
	vendored := map[string]bool{}
	for _, d := range c.Dependencies() {
		vendored[d.Name()] = true
	}
	for _, dep := range c.Metadata.Dependencies {
		if vendored[dep.Name] {
			continue
		}
		repo := strings.TrimSpace(dep.Repository)
		var sub []byte
		switch {
		case strings.HasPrefix(repo, "file://"):
			rel := strings.TrimPrefix(repo, "file://")
			p := path.Clean(path.Join(dir, rel))
			if path.IsAbs(rel) || p == ".." || strings.HasPrefix(p, "../") {
				return nil, fmt.Errorf("%w: %s: dependency %s: %q leaves the repository", ErrInvalid, dir, dep.Name, repo)
			}
			if p == "." {
				p = ""
			}
			if sub, err = f.packageGitChart(ctx, root, p, append(stack, dir)); err != nil {
				return nil, fmt.Errorf("%s: dependency %s (%s): %w", dir, dep.Name, repo, err)
			}
			md, err := archiveMetadata(sub)
			if err != nil {
				return nil, fmt.Errorf("%s: dependency %s (%s): %w", dir, dep.Name, repo, err)
			}
			if dep.Version != "" {
				if _, err := pickVersion([]string{md.Version}, dep.Version); err != nil {
					return nil, fmt.Errorf("%s: dependency %s (%s): version %s does not match %q", dir, dep.Name, repo, md.Version, dep.Version)
				}
			}
		case strings.HasPrefix(repo, "https://"), strings.HasPrefix(repo, "http://"), strings.HasPrefix(repo, "oci://"):
			req := Request{Source: Source{Kind: "HelmRepository", Name: repo, Spec: map[string]any{"url": repo}}, Chart: dep.Name, Version: dep.Version}
			fc, err := f.fetchHelmRepository(ctx, req)
			if err != nil {
				return nil, fmt.Errorf("%s: dependency %s (%s) version %q: %w", dir, dep.Name, repo, dep.Version, err)
			}
			sub = fc.Archive
		case repo == "":
			return nil, fmt.Errorf("%w: %s: dependency %s is neither in charts/ nor has a repository", ErrInvalid, dir, dep.Name)
		default:
			return nil, fmt.Errorf("%w: %s: dependency %s: repository %q: want file://, https:// or oci://", ErrUnsupported, dir, dep.Name, repo)
		}
		md, err := archiveMetadata(sub)
		if err != nil {
			return nil, fmt.Errorf("%s: dependency %s: %w", dir, dep.Name, err)
		}
		files["charts/"+md.Name+"-"+md.Version+".tgz"] = sub
	}
	archive, err := tarGz(c.Name(), files)
	if err != nil {
		return nil, err
	}
	if len(archive) > MaxArchiveSize {
		return nil, fmt.Errorf("%w: the packaged chart has %d bytes, the limit is %d", ErrTooLarge, len(archive), MaxArchiveSize)
	}
	return archive, nil
}

// tarGz writes files below top/ into a deterministic .tgz.
func tarGz(top string, files map[string][]byte) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	epoch := time.Unix(0, 0).UTC()
	for _, n := range names {
		b := files[n]
		if err := tw.WriteHeader(&tar.Header{Name: top + "/" + n, Mode: 0o644, Size: int64(len(b)), ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, fmt.Errorf("package chart: %w", err)
		}
		if _, err := tw.Write(b); err != nil {
			return nil, fmt.Errorf("package chart: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("package chart: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("package chart: %w", err)
	}
	return buf.Bytes(), nil
}

// HelmIgnored applies .helmignore rules to a file of a chart (a slash
// path relative to the chart's directory) and to its directories, as
// helm's loader.LoadDir does.
func HelmIgnored(rules *ignore.Rules, rel string) bool {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		if rules.Ignore(strings.Join(parts[:i], "/"), fileInfo{name: parts[i-1], dir: true}) {
			return true
		}
	}
	return rules.Ignore(rel, fileInfo{name: parts[len(parts)-1]})
}

// fileInfo is the fs.FileInfo .helmignore rules look at.
type fileInfo struct {
	name string
	dir  bool
}

func (i fileInfo) Name() string { return i.name }
func (i fileInfo) Size() int64  { return 0 }
func (i fileInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.dir }
func (i fileInfo) Sys() any           { return nil }
