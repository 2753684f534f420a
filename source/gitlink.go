package source

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/gitaso/gitaso/internal/diag"
)

// Symlinks in a commit are followed as the directory source follows them
// on disk: a link whose target is inside the repository is read under the
// link's name (a file) or walked under it (a directory); one that leaves
// the repository, cannot be resolved or loops refuses the revision.

// maxLinkHops bounds the symlinks followed to resolve one path (Linux's
// MAXSYMLINKS).
const maxLinkHops = 40

// Reasons a symlink in a commit cannot be followed.
var (
	errLinkOutside  = errors.New("leads outside the repository")
	errLinkDangling = errors.New("no such file or directory")
	errLinkNotDir   = errors.New("not a directory")
	errLinkLoop     = errors.New("too many levels of symbolic links")
)

// maxLinkTarget bounds the size of a symlink's blob (its target path).
const maxLinkTarget = 4096

// commitTree resolves paths of one commit's tree through its symlinks.
type commitTree struct {
	repo *git.Repository
	root *object.Tree
}

// resolved is what a path of a commit leads to: its real path (without
// symlinks, "" for the root) and its entry.
type resolved struct {
	real string
	mode filemode.FileMode
	hash plumbing.Hash
}

// resolve follows p (slash-separated, relative to the repository root)
// through the symlinks of the commit, as the kernel resolves a path: a
// link's target is relative to the link's directory, ".." after a link is
// taken from where the link led. An absolute target, or a ".." above the
// root, leads outside the repository. Errors other than the errLink* ones
// are I/O errors reading the cache.
func (c *commitTree) resolve(p string) (resolved, error) {
	parts := splitPath(p)
	var cur []string // the real path so far
	res := resolved{mode: filemode.Dir, hash: c.root.Hash}
	hops := 0
	for i := 0; i < len(parts); i++ {
		name := parts[i]
		switch name {
		case "", ".":
			continue
		case "..":
			if len(cur) == 0 {
				return resolved{}, errLinkOutside
			}
			cur = cur[:len(cur)-1]
			res = resolved{mode: filemode.Dir} // a directory, looked up when needed
			continue
		}
		dir, err := c.tree(cur)
		if err != nil {
			return resolved{}, err
		}
		e, err := dir.FindEntry(name)
		if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
			return resolved{}, errLinkDangling
		} else if err != nil {
			return resolved{}, err
		}
		if e.Mode == filemode.Symlink {
			if hops++; hops > maxLinkHops {
				return resolved{}, errLinkLoop
			}
			target, err := c.linkTarget(e.Hash)
			if err != nil {
				return resolved{}, err
			}
			if strings.HasPrefix(target, "/") {
				return resolved{}, errLinkOutside
			}
			parts = append(splitPath(target), parts[i+1:]...)
			i = -1
			continue
		}
		if i < len(parts)-1 && e.Mode != filemode.Dir {
			return resolved{}, errLinkNotDir
		}
		cur = append(cur, name)
		res = resolved{mode: e.Mode, hash: e.Hash}
	}
	res.real = strings.Join(cur, "/")
	if res.mode == filemode.Dir && res.hash.IsZero() {
		t, err := c.tree(cur)
		if err != nil {
			return resolved{}, err
		}
		res.hash = t.Hash
	}
	return res, nil
}

// tree returns the tree at the real path dir (no symlinks in it).
func (c *commitTree) tree(dir []string) (*object.Tree, error) {
	if len(dir) == 0 {
		return c.root, nil
	}
	t, err := c.root.Tree(strings.Join(dir, "/"))
	if errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrEntryNotFound) {
		return nil, errLinkDangling
	}
	return t, err
}

// linkTarget reads a symlink's blob: the path it points to.
func (c *commitTree) linkTarget(h plumbing.Hash) (string, error) {
	b, err := c.repo.BlobObject(h)
	if err != nil {
		return "", err
	}
	if b.Size > maxLinkTarget {
		return "", fmt.Errorf("symlink target of %d bytes: %w", b.Size, errLinkDangling)
	}
	r, err := b.Reader()
	if err != nil {
		return "", err
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, maxLinkTarget))
	if err != nil {
		return "", err
	}
	return string(data), nil
}

// linkReason says why a link cannot be followed, for linkRefused.
func linkReason(err error) string {
	if errors.Is(err, errLinkOutside) {
		return err.Error()
	}
	return fmt.Sprintf("cannot be resolved (%v)", err)
}

// linkRefused is the error of a symlink name (to target) that cannot be
// followed, in both modes.
func linkRefused(name, target, reason string) *diag.Error {
	return &diag.Error{File: name, Msg: fmt.Sprintf("symlink to %s %s: refused (skipping it would make its objects look deleted)", target, reason)}
}

// loopReason is the reason a link to the directory dir, which contains the
// link, is not followed.
func loopReason(dir string) string {
	if dir == "" {
		dir = "the repository's root"
	}
	return fmt.Sprintf("leads back to %s, which contains it (a loop)", dir)
}

// isLinkError reports whether err is a reason a symlink cannot be followed
// (rather than an I/O error).
func isLinkError(err error) bool {
	return errors.Is(err, errLinkOutside) || errors.Is(err, errLinkDangling) ||
		errors.Is(err, errLinkNotDir) || errors.Is(err, errLinkLoop)
}

// splitPath splits a slash path into its components.
func splitPath(p string) []string {
	return strings.Split(p, "/")
}

// insideSlash reports whether the real slash path p is dir or below it
// ("" is the repository root).
func insideSlash(dir, p string) bool {
	return dir == "" || p == dir || strings.HasPrefix(p, dir+"/")
}
