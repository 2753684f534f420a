package asosrc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// GitTree opens the Git repository at dir (a checkout, or a bare git
// directory such as a mirror) and returns the tree of ref (a commit, tag or
// branch) as a read-only file system, with the commit's hash and committer
// date (RFC 3339, as git's %cI prints it). Nothing is checked out.
func GitTree(dir, ref string) (fs.FS, string, string, error) {
	repo, err := openRepo(dir)
	if err != nil {
		return nil, "", "", err
	}
	h, err := repo.ResolveRevision(plumbing.Revision(ref))
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: resolve %q: %w", dir, ref, err)
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: commit %s: %w", dir, h, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, "", "", fmt.Errorf("%s: tree of %s: %w", dir, h, err)
	}
	return &gitFS{tree: t}, h.String(), c.Committer.When.Format(gitISODate), nil
}

// gitISODate is git's %cI: RFC 3339 with a numeric offset (+00:00, not Z).
const gitISODate = "2006-01-02T15:04:05-07:00"

// openRepo opens a checkout, or a git directory (bare, with or without a
// config file, as the fetch mirrors are).
func openRepo(dir string) (*git.Repository, error) {
	if _, err := os.Stat(filepath.Join(dir, "objects")); err == nil {
		repo, err := git.Open(filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault()), nil)
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

// gitFS is a commit's tree as an fs.FS.
type gitFS struct{ tree *object.Tree }

var (
	_ fs.ReadDirFS  = (*gitFS)(nil)
	_ fs.ReadFileFS = (*gitFS)(nil)
	_ fs.StatFS     = (*gitFS)(nil)
)

// entry finds name: its tree if it is a directory, else its blob.
func (g *gitFS) entry(op, name string) (*object.Tree, *object.TreeEntry, error) {
	if !fs.ValidPath(name) {
		return nil, nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if name == "." {
		return g.tree, nil, nil
	}
	e, err := g.tree.FindEntry(name)
	if err != nil {
		return nil, nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if e.Mode == filemode.Dir {
		t, err := g.tree.Tree(name)
		if err != nil {
			return nil, nil, &fs.PathError{Op: op, Path: name, Err: err}
		}
		return t, e, nil
	}
	return nil, e, nil
}

func (g *gitFS) ReadFile(name string) ([]byte, error) {
	t, e, err := g.entry("read", name)
	if err != nil {
		return nil, err
	}
	if t != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	f, err := g.tree.TreeEntryFile(e)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	r, err := f.Reader()
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	defer r.Close()
	return io.ReadAll(r)
}

func (g *gitFS) ReadDir(name string) ([]fs.DirEntry, error) {
	t, _, err := g.entry("readdir", name)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	out := make([]fs.DirEntry, 0, len(t.Entries))
	for i := range t.Entries {
		out = append(out, gitInfo{e: &t.Entries[i], tree: t})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

func (g *gitFS) Stat(name string) (fs.FileInfo, error) {
	_, e, err := g.entry("stat", name)
	if err != nil {
		return nil, err
	}
	if e == nil { // the root
		return gitInfo{e: &object.TreeEntry{Name: ".", Mode: filemode.Dir}}, nil
	}
	return gitInfo{e: e, tree: g.tree}, nil
}

func (g *gitFS) Open(name string) (fs.File, error) {
	t, e, err := g.entry("open", name)
	if err != nil {
		return nil, err
	}
	if t != nil {
		ents, err := g.ReadDir(name)
		if err != nil {
			return nil, err
		}
		info := gitInfo{e: &object.TreeEntry{Name: path.Base(name), Mode: filemode.Dir}}
		return &gitDir{info: info, ents: ents}, nil
	}
	b, err := g.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return &gitFile{info: gitInfo{e: e, tree: g.tree}, r: bytes.NewReader(b)}, nil
}

// gitInfo is a tree entry as fs.FileInfo and fs.DirEntry. A blob's size is
// looked up only when asked for.
type gitInfo struct {
	e    *object.TreeEntry
	tree *object.Tree // the entry's tree, to look its blob up
}

func (i gitInfo) Name() string { return i.e.Name }
func (i gitInfo) Size() int64 {
	if i.IsDir() || i.tree == nil {
		return 0
	}
	f, err := i.tree.TreeEntryFile(i.e)
	if err != nil {
		return 0
	}
	return f.Size
}
func (i gitInfo) IsDir() bool        { return i.e.Mode == filemode.Dir }
func (i gitInfo) ModTime() time.Time { return time.Time{} }
func (i gitInfo) Sys() any           { return nil }
func (i gitInfo) Type() fs.FileMode  { return i.Mode().Type() }
func (i gitInfo) Info() (fs.FileInfo, error) {
	return i, nil
}
func (i gitInfo) Mode() fs.FileMode {
	if i.IsDir() {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type gitFile struct {
	info gitInfo
	r    *bytes.Reader
}

func (f *gitFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *gitFile) Read(p []byte) (int, error) { return f.r.Read(p) }
func (f *gitFile) Close() error               { return nil }

type gitDir struct {
	info gitInfo
	ents []fs.DirEntry
}

func (d *gitDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *gitDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *gitDir) Close() error { return nil }
func (d *gitDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		out := d.ents
		d.ents = nil
		return out, nil
	}
	if len(d.ents) == 0 {
		return nil, io.EOF
	}
	if n > len(d.ents) {
		n = len(d.ents)
	}
	out := d.ents[:n]
	d.ents = d.ents[n:]
	return out, nil
}
