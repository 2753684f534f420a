package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Files fetches the branch and returns its head commit and the files below
// the source path, within the limits, neither rendered nor parsed: another
// repository that a Flux Kustomization names reads this way.
func (g *Git) Files(ctx context.Context) (revision string, files []File, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	hash, _, err := g.fetch(ctx)
	if err != nil {
		return "", nil, err
	}
	lim := g.opts.Limits.WithDefaults()
	list, errs, err := g.listAt(ctx, hash)
	if err != nil {
		return "", nil, err
	}
	var total int64
	for _, tf := range list {
		data, derr, err := g.readBlob(tf, lim, lim.MaxTotalSize-total)
		if err != nil {
			return "", nil, fmt.Errorf("git source %s at %s: read %s: %w", g.display, hash, tf.path, err)
		}
		if derr != nil {
			errs = append(errs, derr)
			if isTotal(derr) {
				break
			}
			continue
		}
		total += int64(len(data))
		files = append(files, File{Path: tf.path, Data: data})
	}
	if len(errs) > 0 {
		return "", nil, &RevisionError{Revision: hash.String(), Errors: errs.Sorted()}
	}
	return hash.String(), files, nil
}

// Repositories reads other Git repositories (a Flux Kustomization whose
// sourceRef is a GitRepository of another URL), keeping one cached clone per
// URL, branch and credentials, so that a poll fetches only what changed.
type Repositories struct {
	// CacheDir holds the clones ("" keeps them in memory).
	CacheDir string
	// CABundle is extra PEM certificates to trust for https (in addition to
	// a GitRepository's own ca.crt).
	CABundle []byte
	Limits   Limits
	Logger   *slog.Logger
	// Timeout bounds each network exchange (GitOptions.Timeout).
	Timeout time.Duration

	mu    sync.Mutex
	repos map[string]*Git
}

// RepositoryRequest names a branch of a repository and its credentials.
type RepositoryRequest struct {
	URL, Branch        string
	Username, Password string
	CABundle           []byte
	// SSH is the key of an SSH URL (the GitRepository secretRef's
	// identity, password and known_hosts).
	SSH *SSHKey
}

// Files returns the head commit of the branch and the repository's files.
func (rs *Repositories) Files(ctx context.Context, req RepositoryRequest) (string, []File, error) {
	h := sha256.New()
	keyParts := []string{req.URL, req.Branch, req.Username, req.Password, string(req.CABundle)}
	if req.SSH != nil {
		keyParts = append(keyParts, string(req.SSH.Identity), req.SSH.Passphrase, req.SSH.KnownHosts)
	}
	for _, s := range keyParts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	key := hex.EncodeToString(h.Sum(nil))
	rs.mu.Lock()
	if rs.repos == nil {
		rs.repos = map[string]*Git{}
	}
	g := rs.repos[key]
	if g == nil {
		opts := GitOptions{URL: req.URL, Branch: req.Branch, Username: req.Username, Password: req.Password, SSH: req.SSH,
			CABundle: append(append([]byte(nil), rs.CABundle...), req.CABundle...), Limits: rs.Limits, Logger: rs.Logger,
			Timeout: rs.Timeout}
		if rs.CacheDir != "" {
			opts.CacheDir = filepath.Join(rs.CacheDir, key[:16])
		}
		if strings.HasPrefix(req.URL, "http://") && rs.Logger != nil {
			// Read as Flux reads it ("an HTTP/S or SSH address"), as the
			// charts of such a GitRepository are.
			rs.Logger.Warn("reading over plain http:// (no TLS): what is fetched can be changed on the way; prefer https://", "what", "Git repository", "url", redactURL(req.URL))
		}
		var err error
		if g, err = NewGit(opts); err != nil {
			rs.mu.Unlock()
			return "", nil, err
		}
		rs.repos[key] = g
	}
	rs.mu.Unlock()
	return g.Files(ctx)
}
