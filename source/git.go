package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// objectCacheSize bounds go-git's object cache for a cloned repository.
const objectCacheSize = 8 * cache.MiByte

// Errors of the Git source; check with errors.Is.
var (
	// ErrAuth is returned when the Git server refuses the credentials (or
	// needs some and none were given). Not retryable until the configuration
	// changes.
	ErrAuth = errors.New("git authentication failed")
	// ErrBranchNotFound is returned when the branch does not exist on the remote.
	ErrBranchNotFound = errors.New("branch not found")
	// ErrRepoNotFound is returned when the remote repository does not exist (or
	// is empty).
	ErrRepoNotFound = errors.New("repository not found")
	// ErrPathNotFound is returned (as a *PathNotFoundError) when the
	// configured path is not a directory in the commit or directory.
	ErrPathNotFound = errors.New("path not found in commit")
	// ErrTimeout is returned (wrapped, naming the URL) when the Git server
	// did not finish answering within GitOptions.Timeout: a server that
	// accepts the connection and never answers. Retryable.
	ErrTimeout = errors.New("git server did not answer in time")
)

// DefaultTimeout bounds one exchange with the Git server (listing its
// references and fetching what changed) when GitOptions.Timeout is zero:
// Flux's GitRepository spec.timeout default.
const DefaultTimeout = time.Minute

// GitOptions configures a Git source.
type GitOptions struct {
	// URL of the repository: https://, http://, ssh:// (or git@host:path,
	// with SSH), git://, file:// or a local path. Credentials in the URL's user info are moved to Username and
	// Password; they never appear in errors or logs.
	URL string
	// Branch to follow; "main" when empty.
	Branch string
	// Ref, when set, is a full reference followed instead of Branch: a pull
	// request's head (refs/pull/7/head on GitHub and Gitea,
	// refs/merge-requests/7/head on GitLab) or the forge's test merge of it
	// into its base (refs/pull/7/merge on GitHub and Azure DevOps).
	Ref string
	// Path below the repository root to read manifests from; "" is the root.
	Path string
	// CacheDir holds the on-disk bare clone (one subdirectory per URL and
	// branch) so that a restart fetches only what changed. Empty keeps the
	// clone in memory.
	CacheDir string
	// Username and Password for HTTP basic auth (a token is a password).
	Username, Password string
	// SSH is the key of an SSH URL (ssh://git@host/repo or git@host:repo):
	// required for one, as Flux's GitRepository secretRef gives it.
	SSH *SSHKey
	// CABundle is extra PEM certificates to trust for https.
	CABundle []byte
	// InsecureSkipTLS disables TLS verification (tests only).
	InsecureSkipTLS bool
	// Renderer is the render stage; nil parses files as they are.
	Renderer Renderer
	// Logger receives fetch events; slog.Default() when nil.
	Logger *slog.Logger
	// Limits bound the files read at a commit (zero fields take their
	// defaults, see Limits). Blob sizes are checked before a blob is read.
	Limits Limits
	// Timeout bounds each network exchange with the server (a fetch, a
	// listing of references): one that has not finished by then is
	// abandoned with ErrTimeout, so that a server that accepts and never
	// answers cannot stop the daemon's polling. 0: DefaultTimeout;
	// negative: no deadline but the caller's.
	Timeout time.Duration
}

// LogValue renders the options without the password.
func (o GitOptions) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("url", redactURL(o.URL)),
		slog.String("branch", o.Branch),
		slog.String("path", o.Path),
		slog.String("cacheDir", o.CacheDir),
		slog.Bool("auth", o.Username != "" || o.Password != ""),
	)
}

// Git follows one branch of a Git repository. Fetch and Head are safe for
// concurrent use; fetches are serialised.
type Git struct {
	opts    GitOptions
	url     string // without user info
	display string // for errors and logs
	path    string // clean sub-path
	auth    transport.AuthMethod
	log     *slog.Logger

	mu      sync.Mutex
	repo    *git.Repository
	storage *filesystem.Storage // nil in memory
	lastRev string
	last    *manifest.Snapshot
	lastErr error
	parsed  map[treeFile]parseResult // per blob, for the last snapshot
	reads   int                      // blobs read and parsed (tests)
}

// NewGit validates the options; it does no network I/O (the first Fetch
// clones).
func NewGit(opts GitOptions) (*Git, error) {
	if opts.URL == "" {
		return nil, errors.New("git source: URL is required")
	}
	if opts.Branch == "" {
		opts.Branch = "main"
	}
	if !plumbing.NewBranchReferenceName(opts.Branch).IsBranch() || strings.ContainsAny(opts.Branch, " ~^:?*[\\") {
		return nil, fmt.Errorf("git source: invalid branch name %q", opts.Branch)
	}
	if opts.Ref != "" && (!strings.HasPrefix(opts.Ref, "refs/") || strings.ContainsAny(opts.Ref, " ~^:?*[\\") || strings.Contains(opts.Ref, "..")) {
		return nil, fmt.Errorf("git source: invalid reference %q (want refs/...)", opts.Ref)
	}
	sub, err := cleanPath(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("git source: %w", err)
	}
	u, user, pass := splitUserInfo(opts.URL)
	if opts.Username == "" && opts.Password == "" {
		opts.Username, opts.Password = user, pass
	}
	if _, err := transport.NewEndpoint(u); err != nil {
		return nil, fmt.Errorf("git source: invalid URL %s: %w", redactURL(opts.URL), err)
	}
	g := &Git{opts: opts, url: u, display: redactURL(u), path: sub, log: opts.Logger}
	if g.log == nil {
		g.log = slog.Default()
	}
	if IsSSHURL(u) {
		key := SSHKey{}
		if opts.SSH != nil {
			key = *opts.SSH
		}
		if g.auth, err = SSHAuth(u, key); err != nil {
			return nil, fmt.Errorf("git source: %w", err)
		}
		return g, nil
	}
	if opts.Username != "" || opts.Password != "" {
		user := opts.Username
		if user == "" {
			user = "git" // token-only: any non-empty user name works on common servers
		}
		g.auth = &githttp.BasicAuth{Username: user, Password: opts.Password}
	}
	return g, nil
}

// URL returns the repository URL without credentials.
func (g *Git) URL() string { return g.display }

// Branch returns the branch followed.
func (g *Git) Branch() string { return g.followed() }

// Head asks the remote for the branch's current commit SHA without fetching
// anything (like git ls-remote).
func (g *Git) Head(ctx context.Context) (string, error) {
	r := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{g.url}})
	nctx, cancel := g.withTimeout(ctx)
	defer cancel()
	refs, err := r.ListContext(nctx, &git.ListOptions{
		Auth:            g.auth,
		CABundle:        g.opts.CABundle,
		InsecureSkipTLS: g.opts.InsecureSkipTLS,
	})
	if err != nil {
		return "", g.wrap("list remote refs of", g.timedOut(ctx, nctx, err))
	}
	want := plumbing.ReferenceName(g.remoteRef())
	for _, ref := range refs {
		if ref.Name() == want {
			return ref.Hash().String(), nil
		}
	}
	return "", g.wrap("list remote refs of", ErrBranchNotFound)
}

// unchanged reports whether the last snapshot (or refusal) still holds
// while the commit is the same: not when its objects came from sources
// outside the repository (a chart registry may have a new version), nor
// when its render may have failed on such a source (a unit to retry: a
// registry that did not answer).
func (g *Git) unchanged() bool {
	if _, external := g.opts.Renderer.(SourcesRenderer); external {
		return g.last != nil && len(g.last.External) == 0 && !retryUnits(g.last.Units)
	}
	return g.last != nil || g.lastErr != nil
}

// Fetch brings the cache up to date with the remote branch and returns the
// snapshot of its head commit. The first fetch into an empty cache is shallow
// (depth 1); later fetches transfer only new objects. When the head has not
// moved since the previous Fetch of this Git value, the previous result (the
// same *Snapshot, or the same error) is returned without reading the tree
// again; callers must not modify a snapshot.
//
// A commit that cannot be used as a whole yields a *RevisionError (see
// diag.AsList); network and authentication problems are wrapped errors
// naming the URL (see ErrAuth, ErrBranchNotFound, ErrRepoNotFound).
func (g *Git) Fetch(ctx context.Context) (*manifest.Snapshot, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	start := time.Now()
	hash, fetched, err := g.fetch(ctx)
	if err != nil {
		return nil, err
	}
	rev := hash.String()
	if rev == g.lastRev && g.unchanged() {
		g.log.DebugContext(ctx, "git source unchanged", "url", g.display, "branch", g.followed(), "revision", rev)
		return g.last, g.lastErr
	}
	snap, err := g.snapshotAt(ctx, hash)
	if errors.Is(err, plumbing.ErrObjectNotFound) && g.storage != nil {
		// The cache lost objects (a crash mid-write, a disk problem): start
		// over with a fresh clone once.
		g.log.WarnContext(ctx, "git cache is missing objects, cloning again", "url", g.display, "error", err)
		if rerr := g.resetCache(); rerr != nil {
			return nil, rerr
		}
		if hash, fetched, err = g.fetch(ctx); err != nil {
			return nil, err
		}
		rev = hash.String()
		snap, err = g.snapshotAt(ctx, hash)
	}
	var rerr *RevisionError
	if err != nil && !errors.As(err, &rerr) {
		return nil, err // I/O or cancellation: try again next time
	}
	// One line per revision: reading the same one again (its charts
	// re-rendered, values known after apply) is Debug.
	same := rev == g.lastRev && (err != nil) == (g.lastErr != nil) &&
		(snap == nil || g.last == nil || snap.Revision == g.last.Revision)
	g.lastRev, g.last, g.lastErr = rev, snap, err
	attrs := []any{"url", g.display, "branch", g.followed(), "revision", rev, "transferred", fetched,
		"duration", time.Since(start).Round(time.Millisecond)}
	switch {
	case same:
		g.log.DebugContext(ctx, "git revision read again", attrs...)
	case err != nil:
		g.log.WarnContext(ctx, "git revision refused", append(attrs, "errors", len(rerr.Errors))...)
	default:
		g.log.InfoContext(ctx, "git revision read", append(attrs, "objects", len(snap.Objects), "ignored", len(snap.Ignored))...)
	}
	return snap, err
}

// fetch updates the local ref and returns its hash and whether objects were
// transferred.
func (g *Git) fetch(ctx context.Context) (plumbing.Hash, bool, error) {
	if g.repo == nil {
		repo, err := g.open()
		if err != nil {
			return plumbing.ZeroHash, false, err
		}
		g.repo = repo
	}
	if g.storage != nil {
		// Every fetch adds a pack file; go-git cannot repack a shallow
		// repository, so when they pile up, start over with a shallow clone.
		if packs, err := g.storage.ObjectPacks(); err == nil && len(packs) > maxPacks {
			g.log.InfoContext(ctx, "compacting git cache by cloning again", "url", g.display, "packs", len(packs))
			if err := g.resetCache(); err != nil {
				return plumbing.ZeroHash, false, err
			}
		}
	}
	refName := plumbing.NewRemoteReferenceName("origin", g.followed())
	before := plumbing.ZeroHash
	if ref, err := g.repo.Reference(refName, true); err == nil {
		before = ref.Hash()
		if _, err := g.repo.CommitObject(before); err != nil {
			// The cache lost objects (a crash mid-write, a disk problem):
			// an incremental fetch would fetch the whole history.
			g.log.WarnContext(ctx, "git cache is damaged, cloning again", "url", g.display, "error", err)
			if err := g.resetCache(); err != nil {
				return plumbing.ZeroHash, false, err
			}
			before = plumbing.ZeroHash
		}
	}
	depth := 0
	if before.IsZero() {
		depth = 1 // first clone: only the head commit
	}
	// Never fetch with a depth after the first clone: the server would send
	// the whole tree again instead of what changed.
	nctx, cancel := g.withTimeout(ctx)
	defer cancel()
	err := g.repo.FetchContext(nctx, &git.FetchOptions{
		RemoteName:      "origin",
		RefSpecs:        []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", g.remoteRef(), refName))},
		Depth:           depth,
		Auth:            g.auth,
		CABundle:        g.opts.CABundle,
		InsecureSkipTLS: g.opts.InsecureSkipTLS,
		Tags:            git.NoTags,
		Force:           true,
	})
	if err != nil && !errors.Is(err, git.NoErrAlreadyUpToDate) {
		return plumbing.ZeroHash, false, g.wrap("fetch", g.timedOut(ctx, nctx, err))
	}
	// On shallow repositories Fetch may report nothing when nothing changed
	// (and vice versa): the ref is the truth.
	ref, rerr := g.repo.Reference(refName, true)
	if rerr != nil {
		return plumbing.ZeroHash, false, g.wrap("fetch", ErrBranchNotFound)
	}
	return ref.Hash(), ref.Hash() != before, nil
}

// timeout is the deadline of one network exchange; 0 for none.
func (g *Git) timeout() time.Duration {
	switch t := g.opts.Timeout; {
	case t == 0:
		return DefaultTimeout
	case t < 0:
		return 0
	default:
		return t
	}
}

// withTimeout returns ctx bounded by the network timeout.
func (g *Git) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if t := g.timeout(); t > 0 {
		return context.WithTimeout(ctx, t)
	}
	return context.WithCancel(ctx)
}

// timedOut turns err into ErrTimeout when the exchange's own deadline
// (nctx, derived from ctx) ended it rather than the caller: the error a
// hung server leaves is otherwise a bare "context deadline exceeded" or
// an I/O error of the closed connection.
func (g *Git) timedOut(ctx, nctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(nctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w: no answer within %s: %w", ErrTimeout, g.timeout(), err)
	}
	return err
}

// maxPacks is the number of pack files in the cache above which the cache is
// replaced by a fresh shallow clone.
var maxPacks = 64

// resetCache deletes the on-disk cache and opens a new, empty one.
func (g *Git) resetCache() error {
	if g.storage != nil {
		_ = g.storage.Close()
	}
	g.repo, g.storage = nil, nil
	if err := os.RemoveAll(g.cacheDir()); err != nil {
		return fmt.Errorf("git source %s: delete cache: %w", g.display, err)
	}
	repo, err := g.open()
	if err != nil {
		return err
	}
	g.repo = repo
	return nil
}

// cacheDir is the on-disk bare repository of this URL and branch.
func (g *Git) cacheDir() string {
	return filepath.Join(g.opts.CacheDir, cacheKey(g.url, g.followed()))
}

// remoteRef is the reference fetched: Ref, or the branch's.
func (g *Git) remoteRef() string {
	if g.opts.Ref != "" {
		return g.opts.Ref
	}
	return "refs/heads/" + g.opts.Branch
}

// followed names what is followed in the cache and in messages: the
// branch, or the reference without "refs/".
func (g *Git) followed() string {
	if g.opts.Ref != "" {
		return strings.TrimPrefix(g.opts.Ref, "refs/")
	}
	return g.opts.Branch
}

// open opens (or creates) the bare cache repository.
func (g *Git) open() (*git.Repository, error) {
	var repo *git.Repository
	if g.opts.CacheDir == "" {
		r, err := git.Init(memory.NewStorage(), nil)
		if err != nil {
			return nil, fmt.Errorf("git source %s: init in-memory repository: %w", g.display, err)
		}
		repo = r
	} else {
		dir := g.cacheDir()
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("git source %s: create cache: %w", g.display, err)
		}
		// Keep a few pack files open: reading thousands of blobs would
		// otherwise reopen the pack for every object. Each blob is read
		// once per revision, so a small object cache (delta bases) does:
		// go-git's default of 96 MiB kept every blob of the last read.
		st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRU(objectCacheSize),
			filesystem.Options{MaxOpenDescriptors: 16})
		r, err := git.Open(st, nil)
		switch {
		case err == nil:
			g.log.Debug("git cache opened", "dir", dir)
		case errors.Is(err, git.ErrRepositoryNotExists):
			r, err = git.Init(st, nil)
			if err != nil {
				_ = st.Close()
				return nil, fmt.Errorf("git source %s: init cache %s: %w", g.display, dir, err)
			}
		default:
			_ = st.Close()
			return nil, fmt.Errorf("git source %s: open cache %s (delete it to start over): %w", g.display, dir, err)
		}
		g.storage = st
		repo = r
	}
	if rem, err := repo.Remote("origin"); err == nil {
		if urls := rem.Config().URLs; len(urls) == 1 && urls[0] == g.url {
			return repo, nil
		}
		if err := repo.DeleteRemote("origin"); err != nil {
			return nil, fmt.Errorf("git source %s: reset remote: %w", g.display, err)
		}
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{g.url}}); err != nil {
		return nil, fmt.Errorf("git source %s: create remote: %w", g.display, err)
	}
	return repo, nil
}

// cacheKey names the cache subdirectory of one URL and branch.
func cacheKey(u, branch string) string {
	sum := sha256.Sum256([]byte(u + "\x00" + branch))
	return hex.EncodeToString(sum[:8])
}

// snapshotAt reads, renders and parses the manifests of one commit. Without
// a Renderer, files whose blob was parsed for the previous snapshot are not
// read or parsed again (their objects are deep-copied), so a commit touching
// one file of thousands costs a tree walk and one parse. Blob sizes are
// checked against the limits before a blob is read.
func (g *Git) snapshotAt(ctx context.Context, hash plumbing.Hash) (*manifest.Snapshot, error) {
	lim := g.opts.Limits.WithDefaults()
	rev := hash.String()
	list, errs, err := g.listAt(ctx, hash)
	if err != nil {
		return nil, err
	}
	var total int64 // bytes of the files so far
	// read reads a blob within the limits; a *diag.Error refuses the file,
	// stop is true when the total is exceeded (reported once).
	read := func(tf treeFile) (data []byte, derr *diag.Error, stop bool, err error) {
		data, derr, err = g.readBlob(tf, lim, lim.MaxTotalSize-total)
		if err != nil {
			return nil, nil, false, fmt.Errorf("git source %s at %s: read %s: %w", g.display, hash, tf.path, err)
		}
		total += int64(len(data))
		return data, derr, derr != nil && isTotal(derr), nil
	}
	if g.opts.Renderer != nil {
		files := make([]File, 0, len(list))
		for _, tf := range list {
			data, derr, stop, err := read(tf)
			if err != nil {
				return nil, err
			}
			if derr != nil {
				errs = append(errs, derr)
				if stop {
					break
				}
				continue
			}
			files = append(files, File{Path: tf.path, Data: data})
		}
		if len(errs) > 0 {
			return nil, &RevisionError{Revision: rev, Errors: errs.Sorted()}
		}
		snap, err := BuildWithLimits(ctx, rev, files, g.opts.Renderer, lim)
		if snap != nil {
			snap.Texts = g.blobTexts(list)
		}
		return snap, err
	}
	results := make([]parseResult, len(list))
	next := make(map[treeFile]parseResult, len(list))
	var miss []File
	var missIdx []int
	var base int64 // YAML nodes of the files parsed before
	for i, tf := range list {
		if isKustomization(tf.path) || !IsYAMLFile(tf.path) {
			continue // a chart's other files are for a renderer only
		}
		if r, ok := g.parsed[tf]; ok {
			if total += r.size; total > lim.MaxTotalSize {
				errs = append(errs, totalSizeError(tf.path, lim.MaxTotalSize))
				break
			}
			next[tf] = r
			base += r.nodes
			results[i] = parseResult{objs: manifest.CopyObjects(r.objs), err: r.err, nodes: r.nodes, size: r.size}
			continue
		}
		data, derr, stop, err := read(tf)
		if err != nil {
			return nil, err
		}
		if derr != nil {
			errs = append(errs, derr)
			if stop {
				break
			}
			continue
		}
		miss = append(miss, File{Path: tf.path, Data: data})
		missIdx = append(missIdx, i)
	}
	if len(errs) > 0 {
		return nil, &RevisionError{Revision: rev, Errors: errs.Sorted()}
	}
	g.reads += len(miss)
	parsed, err := parseAll(ctx, miss, lim, base)
	if err != nil {
		return nil, err
	}
	for j, i := range missIdx {
		parsed[j].size = int64(len(miss[j].Data))
		if parsed[j].parsed {
			next[list[i]] = parsed[j]
		}
		results[i] = parseResult{objs: manifest.CopyObjects(parsed[j].objs), err: parsed[j].err, nodes: parsed[j].nodes}
	}
	g.parsed = next
	if e := totalNodesError(results, func(i int) string { return list[i].path }, lim); e != nil {
		return nil, &RevisionError{Revision: rev, Errors: diag.List{e}}
	}
	snap, err := assemble(rev, results)
	if snap != nil {
		snap.Texts = g.blobTexts(list)
	}
	return snap, err
}

// blobTexts are a snapshot's files read back from the cache when an error
// needs a field's line (see manifest.Texts), rather than every file held
// with the snapshot for as long as it is the last one: 40 MB at 100,000
// resources.
type blobTexts struct {
	g     *Git
	blobs map[string]plumbing.Hash
}

func (g *Git) blobTexts(list []treeFile) *blobTexts {
	t := &blobTexts{g: g, blobs: make(map[string]plumbing.Hash, len(list))}
	for _, tf := range list {
		t.blobs[tf.path] = tf.hash
	}
	return t
}

// Text reads file's blob from the cache; nil when the snapshot has no such
// file or the cache lost it (an error then keeps its object's line). It
// must not be called while a Fetch of the same Git value runs on the
// calling goroutine.
func (t *blobTexts) Text(file string) []byte {
	h, ok := t.blobs[file]
	if !ok {
		return nil
	}
	g := t.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.repo == nil {
		return nil
	}
	lim := g.opts.Limits.WithDefaults()
	data, derr, err := g.readBlob(treeFile{path: file, hash: h}, lim, lim.MaxTotalSize)
	if err != nil || derr != nil {
		return nil
	}
	return data
}

// treeFile is a manifest file in a commit: its path and blob.
type treeFile struct {
	path string
	hash plumbing.Hash
}

// listAt lists every *.yaml/*.yml below the path in a commit, and every
// file of a chart directory (ChartFiles), sorted by path, skipping hidden
// directories and submodules. Symlinks inside the repository are followed
// (see commitTree); the ones that cannot be are refused entries, returned
// as errs, each naming the link.
func (g *Git) listAt(ctx context.Context, hash plumbing.Hash) (files []treeFile, errs diag.List, err error) {
	commit, err := g.repo.CommitObject(hash)
	if err != nil {
		return nil, nil, fmt.Errorf("git source %s: read commit %s: %w", g.display, hash, err)
	}
	root, err := commit.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("git source %s: read tree of %s: %w", g.display, hash, err)
	}
	ct := &commitTree{repo: g.repo, root: root}
	tree, real := root, ""
	if g.path != "" {
		r, err := ct.resolve(g.path)
		switch {
		case errors.Is(err, errLinkDangling) || errors.Is(err, errLinkNotDir) || (err == nil && r.mode != filemode.Dir):
			return nil, nil, fmt.Errorf("git source %s: %w", g.display, &PathNotFoundError{Revision: hash.String(), Path: g.path})
		case isLinkError(err):
			return nil, nil, &RevisionError{Revision: hash.String(), Errors: diag.List{{File: g.path,
				Msg: fmt.Sprintf("the source path, through a symlink, %s: refused", linkReason(err))}}}
		case err != nil:
			return nil, nil, fmt.Errorf("git source %s: read %q at %s: %w", g.display, g.path, hash, err)
		}
		if tree, err = g.repo.TreeObject(r.hash); err != nil {
			return nil, nil, fmt.Errorf("git source %s: read %q at %s: %w", g.display, g.path, hash, err)
		}
		real = r.real
	}
	// walk lists tree t, whose real path is realDir, under the name dir;
	// reals are the real paths of the directories being walked.
	var walk func(t *object.Tree, dir string, reals []string, chart bool) error
	walk = func(t *object.Tree, dir string, reals []string, chart bool) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !chart {
			e, err := t.FindEntry(ChartFile)
			chart = err == nil && e.Mode.IsFile()
		}
		realDir := reals[len(reals)-1]
		for _, e := range t.Entries {
			p := path.Join(dir, e.Name)
			mode, h, realP := e.Mode, e.Hash, path.Join(realDir, e.Name)
			if mode == filemode.Symlink {
				if hiddenDir(e.Name) && !IsYAMLFile(e.Name) {
					continue // as a hidden directory
				}
				r, err := ct.resolve(realP)
				if isLinkError(err) {
					target, _ := ct.linkTarget(e.Hash)
					errs = append(errs, linkRefused(p, target, linkReason(err)))
					continue
				} else if err != nil {
					return fmt.Errorf("resolve symlink %s: %w", p, err)
				}
				if r.mode == filemode.Dir {
					if slices.ContainsFunc(reals, func(d string) bool { return insideSlash(r.real, d) }) {
						target, _ := ct.linkTarget(e.Hash)
						errs = append(errs, linkRefused(p, target, loopReason(r.real)))
						continue
					}
				} else if !IsYAMLFile(e.Name) && !chart {
					continue
				}
				mode, h, realP = r.mode, r.hash, r.real
			} else if mode == filemode.Dir && hiddenDir(e.Name) {
				continue
			}
			switch mode {
			case filemode.Dir:
				sub, err := g.repo.TreeObject(h)
				if err != nil {
					return fmt.Errorf("read tree %s: %w", p, err)
				}
				if err := walk(sub, p, append(reals, realP), chart); err != nil {
					return err
				}
			case filemode.Regular, filemode.Executable, filemode.Deprecated:
				if IsYAMLFile(e.Name) || chart {
					files = append(files, treeFile{path: p, hash: h})
				}
			}
		}
		return nil
	}
	if err := walk(tree, g.path, []string{real}, false); err != nil {
		return nil, nil, fmt.Errorf("git source %s at %s: %w", g.display, hash, err)
	}
	slices.SortFunc(files, func(a, b treeFile) int { return strings.Compare(a.path, b.path) })
	return files, errs.Sorted(), nil
}

// readBlob reads the blob of tf when it is within the file limit and max
// (what is left of the total); its size is known before it is read. A blob
// beyond either is refused with a *diag.Error naming the file and the limit.
func (g *Git) readBlob(tf treeFile, lim Limits, max int64) ([]byte, *diag.Error, error) {
	b, err := g.repo.BlobObject(tf.hash)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case b.Size > lim.MaxFileSize:
		return nil, fileSizeError(tf.path, b.Size, lim.MaxFileSize), nil
	case b.Size > max:
		return nil, totalSizeError(tf.path, lim.MaxTotalSize), nil
	}
	r, err := b.Reader()
	if err != nil {
		return nil, nil, err
	}
	defer r.Close()
	data := make([]byte, b.Size)
	if _, err := io.ReadFull(io.LimitReader(r, b.Size), data); err != nil {
		return nil, nil, err
	}
	return data, nil, nil
}

// Close releases the cache's open files. The Git value can be used again
// afterwards (it reopens the cache).
func (g *Git) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	var err error
	if g.storage != nil {
		err = g.storage.Close()
	}
	g.repo, g.storage = nil, nil
	return err
}

// wrap names the URL and branch in an error and classifies go-git's errors.
func (g *Git) wrap(op string, err error) error {
	var kind error
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired), errors.Is(err, transport.ErrAuthorizationFailed):
		kind = ErrAuth
	case errors.Is(err, transport.ErrRepositoryNotFound), errors.Is(err, transport.ErrEmptyRemoteRepository):
		kind = ErrRepoNotFound
	case errors.Is(err, git.NoMatchingRefSpecError{}):
		kind = ErrBranchNotFound
	}
	if kind != nil && !errors.Is(err, kind) {
		return fmt.Errorf("git %s %s (branch %s): %w: %w", op, g.display, g.followed(), kind, err)
	}
	return fmt.Errorf("git %s %s (branch %s): %w", op, g.display, g.followed(), err)
}

// splitUserInfo removes user info from an http(s) URL.
func splitUserInfo(raw string) (u, user, pass string) {
	parsed, err := url.Parse(raw)
	if err != nil || parsed.User == nil || (parsed.Scheme != "http" && parsed.Scheme != "https") {
		return raw, "", ""
	}
	user = parsed.User.Username()
	pass, _ = parsed.User.Password()
	parsed.User = nil
	return parsed.String(), user, pass
}

// redactURL hides the password of a URL with user info.
func redactURL(raw string) string {
	parsed, err := url.Parse(raw)
	if err != nil || parsed.User == nil {
		if err != nil && strings.Contains(raw, "@") {
			return "<unparsable URL>"
		}
		return raw
	}
	return parsed.Redacted()
}
