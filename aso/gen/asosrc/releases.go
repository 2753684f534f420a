package asosrc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// Repo is an ASO Git repository read in place (a checkout, or a bare git
// directory such as the fetch mirrors), from which the trees of release
// tags are exported.
type Repo struct {
	repo *git.Repository
}

// OpenRepo opens a checkout or a git directory (bare, with or without a
// config file).
func OpenRepo(dir string) (*Repo, error) {
	if _, err := os.Stat(filepath.Join(dir, "objects")); err == nil {
		st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
		r, err := git.Open(st, nil)
		if err != nil {
			return nil, fmt.Errorf("open git directory %s: %w", dir, err)
		}
		return &Repo{repo: r}, nil
	}
	r, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", dir, err)
	}
	return &Repo{repo: r}, nil
}

// Commit resolves a tag, branch or commit to a commit hash.
func (r *Repo) Commit(rev string) (string, error) {
	h, err := r.repo.ResolveRevision(plumbing.Revision(rev + "^{commit}"))
	if err != nil {
		h, err = r.repo.ResolveRevision(plumbing.Revision(rev))
	}
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", rev, err)
	}
	return h.String(), nil
}

// Export writes the files under the given slash paths of rev's tree into
// dir (v2/api/storage/v1api20210401 lands in dir/v2/api/storage/v1api20210401).
// A path rev does not have is skipped: ok lists the paths exported.
func (r *Repo) Export(rev string, paths []string, dir string) (ok []string, err error) {
	hash, err := r.Commit(rev)
	if err != nil {
		return nil, err
	}
	c, err := r.repo.CommitObject(plumbing.NewHash(hash))
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", rev, err)
	}
	root, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("tree of %s: %w", rev, err)
	}
	for _, p := range paths {
		t, err := root.Tree(p)
		if errors.Is(err, object.ErrDirectoryNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%s: %w", rev, p, err)
		}
		if err := writeTree(t, filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			return nil, fmt.Errorf("%s:%s: %w", rev, p, err)
		}
		ok = append(ok, p)
	}
	return ok, nil
}

func writeTree(t *object.Tree, dir string) error {
	return t.Files().ForEach(func(f *object.File) error {
		if strings.HasSuffix(f.Name, "_test.go") {
			return nil // never read; some are large
		}
		out := filepath.Join(dir, filepath.FromSlash(path.Clean(f.Name)))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		rd, err := f.Reader()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		defer rd.Close()
		w, err := os.Create(out)
		if err != nil {
			return err
		}
		if _, err := io.Copy(w, rd); err != nil {
			w.Close()
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		return w.Close()
	})
}
