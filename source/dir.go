package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
)

// Dir reads manifests from a local directory (development mode).
type Dir struct {
	root   string
	path   string
	render Renderer
	limits Limits
}

// DirOption configures a Dir.
type DirOption func(*Dir)

// WithRenderer sets the render stage of a Dir.
func WithRenderer(r Renderer) DirOption { return func(d *Dir) { d.render = r } }

// WithLimits sets the limits of a Dir (zero fields keep their defaults, see
// Limits).
func WithLimits(l Limits) DirOption { return func(d *Dir) { d.limits = l } }

// NewDir returns a source reading every *.yaml/*.yml below root/path, and
// every file of a Helm chart directory below it (see ChartFile). Object
// files are named relative to root. Hidden directories (.git, ...) are
// skipped.
//
// Only regular files inside root are read. A symlink to a regular file
// inside root is followed; one whose target is outside root (or cannot be
// resolved), and any *.yaml/*.yml entry that is not a regular file (a
// device, FIFO, socket or directory), refuses the revision with an error
// naming it: silently skipping it would drop its objects, which the
// reconciler would delete. Symlinked directories are not descended into.
// Files above Limits.MaxFileSize, or beyond Limits.MaxTotalSize together,
// refuse the revision too.
func NewDir(root, path string, opts ...DirOption) *Dir {
	d := &Dir{root: root, path: path}
	for _, o := range opts {
		o(d)
	}
	return d
}

// Fetch reads the directory. The revision is "dir-" and the first 12 hex
// digits of a sha256 over the sorted (path, content) pairs of the files read,
// so it changes exactly when a manifest changes. A file that cannot be read
// safely (see NewDir) yields a *RevisionError; a path that does not exist
// below the root a *PathNotFoundError.
func (d *Dir) Fetch(ctx context.Context) (*manifest.Snapshot, error) {
	files, errs, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		// The revision still names the content: the files read and the
		// problems of the others.
		marked := files
		for _, e := range errs {
			marked = append(marked, File{Path: e.File, Data: []byte(e.Error())})
		}
		return nil, &RevisionError{Revision: DirRevision(marked), Errors: errs.Sorted()}
	}
	return BuildWithLimits(ctx, DirRevision(files), files, d.render, d.limits)
}

// Files lists and reads the *.yaml/*.yml files below the path (and the
// files of chart directories, see ChartFile), sorted by path. Files that cannot be read safely (see NewDir) are a diag.List.
func (d *Dir) Files(ctx context.Context) ([]File, error) {
	files, errs, err := d.read(ctx)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		return nil, errs.Sorted()
	}
	return files, nil
}

// read lists and reads the files; errs are the files refused.
func (d *Dir) read(ctx context.Context) (files []File, errs diag.List, err error) {
	lim := d.limits.WithDefaults()
	sub, err := cleanPath(d.path)
	if err != nil {
		return nil, nil, err
	}
	root, err := filepath.Abs(d.root)
	if err == nil {
		root, err = filepath.EvalSymlinks(root)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read directory source: %w", err)
	}
	if st, err := os.Stat(root); err != nil {
		return nil, nil, fmt.Errorf("read directory source: %w", err)
	} else if !st.IsDir() {
		return nil, nil, fmt.Errorf("read directory source: %s is not a directory", d.root)
	}
	start, err := filepath.EvalSymlinks(filepath.Join(root, filepath.FromSlash(sub)))
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir) {
		return nil, nil, &PathNotFoundError{Revision: DirRevision(nil), Path: sub}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read directory source: %w", err)
	}
	if !inside(root, start) {
		return nil, nil, fmt.Errorf("read directory source: path %q leads outside %s (a symlink?)", sub, d.root)
	}
	if st, err := os.Stat(start); err != nil {
		return nil, nil, fmt.Errorf("read directory source: %w", err)
	} else if !st.IsDir() {
		return nil, nil, &PathNotFoundError{Revision: DirRevision(nil), Path: sub}
	}
	var total int64
	var charts []string // chart directories (ChartFile) walked into, outermost first
	inChart := func(p string) bool {
		for _, c := range charts {
			if strings.HasPrefix(p, c+string(filepath.Separator)) {
				return true
			}
		}
		return false
	}
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
			if st, err := os.Lstat(filepath.Join(p, ChartFile)); err == nil && st.Mode().IsRegular() && !inChart(p) {
				charts = append(charts, p)
			}
			return nil
		}
		if !IsYAMLFile(e.Name()) && !inChart(p) {
			return nil
		}
		rel, err := filepath.Rel(start, p)
		if err != nil {
			return err
		}
		name := path.Join(sub, filepath.ToSlash(rel))
		data, size, derr := readRegular(root, p, name, min(lim.MaxFileSize, lim.MaxTotalSize-total), lim.MaxFileSize)
		if derr != nil {
			if errors.Is(derr, ErrLimit) && size <= lim.MaxFileSize {
				// Within the file limit, beyond the total: once, and stop.
				errs = append(errs, totalSizeError(name, lim.MaxTotalSize))
				return fs.SkipAll
			}
			errs = append(errs, derr)
			return nil
		}
		total += int64(len(data))
		files = append(files, File{Path: name, Data: data})
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("read directory source %s: %w", start, err)
	}
	return sortedFiles(files), errs, nil
}

// readRegular reads the regular file p (named name in errors) inside root:
// a symlink is resolved and must stay inside root; anything but a regular
// file is refused before it is opened, and again on the open file (it may
// have been replaced since). It reads at most max bytes (the file limit, or
// what is left of the total) and refuses a file that is larger, or grows
// while it is read; fileMax is the file limit, for the message. size is the
// size seen, when the file was too large.
func readRegular(root, p, name string, max, fileMax int64) (data []byte, size int64, derr *diag.Error) {
	fail := func(format string, args ...any) ([]byte, int64, *diag.Error) {
		return nil, 0, &diag.Error{File: name, Msg: fmt.Sprintf(format, args...)}
	}
	info, err := os.Lstat(p)
	if err != nil {
		return fail("cannot read: %v", err)
	}
	target := p
	if info.Mode()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fail("symlink cannot be resolved (%v): refused", errors.Unwrap(err))
		}
		if !inside(root, t) {
			return fail("symlink to %s leads outside the directory source %s: refused (gitaso reads nothing outside the root)", t, root)
		}
		if info, err = os.Lstat(t); err != nil {
			return fail("cannot read symlink target: %v", err)
		}
		target = t
	}
	if !info.Mode().IsRegular() {
		return fail("is a %s, not a regular file: refused", fileKind(info.Mode()))
	}
	if info.Size() > max {
		return nil, info.Size(), fileSizeError(name, info.Size(), fileMax)
	}
	// Non-blocking: a FIFO swapped in since Lstat cannot hang the open.
	f, err := os.OpenFile(target, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return fail("cannot read: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fail("cannot read: %v", err)
	} else if !st.Mode().IsRegular() {
		return fail("is a %s, not a regular file: refused", fileKind(st.Mode()))
	}
	data, err = readAll(io.LimitReader(f, min(max, math.MaxInt64-1)+1), min(st.Size(), max))
	if err != nil {
		return fail("cannot read: %v", err)
	}
	if n := int64(len(data)); n > max {
		return nil, n, &diag.Error{File: name, Err: &LimitError{Limit: "file-size", Max: fileMax,
			What: fmt.Sprintf("the file grew to more than %s while it was read", formatSize(max))}}
	}
	return data, 0, nil
}

// readAll is io.ReadAll into a buffer sized for the size the file had
// when opened (plus one byte, so that the end is seen without growing it).
func readAll(r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, max(size, 0)+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // it grew since: let append pick the size
		}
	}
}

// fileKind names a non-regular file mode for errors.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	}
	return "special file"
}

// inside reports whether the clean absolute path p is root or below it.
func inside(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
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
