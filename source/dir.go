package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// Dir reads manifests from a local directory (development mode).
type Dir struct {
	root   string
	path   string
	render Renderer
}

// DirOption configures a Dir.
type DirOption func(*Dir)

// WithRenderer sets the render stage of a Dir.
func WithRenderer(r Renderer) DirOption { return func(d *Dir) { d.render = r } }

// NewDir returns a source reading every *.yaml/*.yml below root/path. Object
// files are named relative to root. Hidden directories (.git, ...) are
// skipped.
func NewDir(root, path string, opts ...DirOption) *Dir {
	d := &Dir{root: root, path: path}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Fetch reads the directory. The revision is "dir-" and the first 12 hex
// digits of a sha256 over the sorted (path, content) pairs of the files read,
// so it changes exactly when a manifest changes.
func (d *Dir) Fetch(ctx context.Context) (*Snapshot, error) {
	files, err := d.Files(ctx)
	if err != nil {
		return nil, err
	}
	return Build(ctx, DirRevision(files), files, d.render)
}

// Files lists and reads the *.yaml/*.yml files below the path, sorted by path.
func (d *Dir) Files(ctx context.Context) ([]File, error) {
	sub, err := cleanPath(d.path)
	if err != nil {
		return nil, err
	}
	start := filepath.Join(d.root, filepath.FromSlash(sub))
	st, err := os.Stat(start)
	if err != nil {
		return nil, fmt.Errorf("read directory source: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("read directory source: %s is not a directory", start)
	}
	var files []File
	err = filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if e.IsDir() {
			if p != start && hiddenDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !IsYAMLFile(e.Name()) {
			return nil
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: filepath.ToSlash(rel), Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read directory source %s: %w", start, err)
	}
	return sortedFiles(files), nil
}

// DirRevision is the revision of a directory's files: "dir-" + the first 12
// hex digits of sha256 over the (path, content) pairs sorted by path.
func DirRevision(files []File) string {
	h := sha256.New()
	for _, f := range sortedFiles(files) {
		h.Write([]byte(f.Path))
		h.Write([]byte{0})
		h.Write([]byte(strconv.Itoa(len(f.Data))))
		h.Write([]byte{0})
		h.Write(f.Data)
	}
	return "dir-" + hex.EncodeToString(h.Sum(nil))[:12]
}
