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
// Only regular files inside root are read. A symlink whose target is
// inside root is followed, a directory as a directory, and read under the
// link's name; one whose target is outside root, cannot be resolved or
// contains the link (a loop), and any *.yaml/*.yml entry that is a device,
// FIFO or socket, refuses the revision with an error naming it: silently
// skipping it would drop its objects, which the reconciler would delete.
// The Git source reads symlinks of a commit the same way (see the package
// documentation).
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
	w := &dirWalk{ctx: ctx, root: root, lim: lim}
	if err := w.walk(start, sub, []string{start}, false); err != nil && !errors.Is(err, errStopWalk) {
		return nil, nil, fmt.Errorf("read directory source %s: %w", start, err)
	}
	return sortedFiles(w.files), w.errs, nil
}

// errStopWalk ends a walk early (the total size is exceeded).
var errStopWalk = errors.New("stop walking")

// dirWalk is one listing of a directory source: the files read and the
// entries refused.
type dirWalk struct {
	ctx   context.Context
	root  string // absolute, symlinks resolved
	lim   Limits
	total int64
	files []File
	errs  diag.List
}

// walk reads the directory dir (a real path inside root), whose entries are
// named below name (the path a user sees, through the symlinks followed).
// real holds the real paths of the directories being walked, outermost
// first, so that a symlink back to one of them is refused rather than
// followed for ever. chart is true inside a Helm chart directory.
func (w *dirWalk) walk(dir, name string, real []string, chart bool) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	if st, err := os.Lstat(filepath.Join(dir, ChartFile)); err == nil && st.Mode().IsRegular() {
		chart = true
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		n := path.Join(name, e.Name())
		switch {
		case e.IsDir():
			if hiddenDir(e.Name()) {
				continue
			}
			if err := w.walk(p, n, append(real, p), chart); err != nil {
				return err
			}
		case e.Type()&fs.ModeSymlink != 0:
			if err := w.link(p, n, real, chart); err != nil {
				return err
			}
		case IsYAMLFile(e.Name()) || chart:
			if err := w.read(p, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// link follows the symlink p (named n) when its target is inside the root:
// a directory is walked under the link's name, a file read under it. A
// link that leaves the root, cannot be resolved or leads back to a
// directory being walked refuses the revision: skipping it would drop its
// objects, which the reconciler would delete. Hidden links that are not
// named *.yaml/*.yml are skipped, as hidden directories are.
func (w *dirWalk) link(p, n string, real []string, chart bool) error {
	base := filepath.Base(p)
	if hiddenDir(base) && !IsYAMLFile(base) {
		return nil
	}
	target, _ := os.Readlink(p)
	t, err := filepath.EvalSymlinks(p)
	if err != nil {
		w.errs = append(w.errs, linkRefused(n, target, fmt.Sprintf("cannot be resolved (%v)", pathErr(err))))
		return nil
	}
	if !inside(w.root, t) {
		w.errs = append(w.errs, linkRefused(n, target, "leads outside the directory source "+w.root))
		return nil
	}
	st, err := os.Stat(t)
	if err != nil {
		w.errs = append(w.errs, &diag.Error{File: n, Msg: fmt.Sprintf("cannot read symlink target: %v", err)})
		return nil
	}
	if !st.IsDir() {
		if IsYAMLFile(base) || chart {
			return w.read(p, n)
		}
		return nil
	}
	for _, r := range real {
		if inside(t, r) {
			w.errs = append(w.errs, linkRefused(n, target, loopReason(t)))
			return nil
		}
	}
	return w.walk(t, n, append(real, t), chart)
}

// read reads the file p as n within the limits (see readRegular).
func (w *dirWalk) read(p, n string) error {
	data, size, derr := readRegular(w.root, p, n, min(w.lim.MaxFileSize, w.lim.MaxTotalSize-w.total), w.lim.MaxFileSize)
	if derr != nil {
		if errors.Is(derr, ErrLimit) && size <= w.lim.MaxFileSize {
			// Within the file limit, beyond the total: once, and stop.
			w.errs = append(w.errs, totalSizeError(n, w.lim.MaxTotalSize))
			return errStopWalk
		}
		w.errs = append(w.errs, derr)
		return nil
	}
	w.total += int64(len(data))
	w.files = append(w.files, File{Path: n, Data: data})
	return nil
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
		link, _ := os.Readlink(p)
		t, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, 0, linkRefused(name, link, fmt.Sprintf("cannot be resolved (%v)", pathErr(err)))
		}
		if !inside(root, t) {
			return nil, 0, linkRefused(name, link, "leads outside the directory source "+root)
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

// pathErr is the cause of a path error (ENOENT, ELOOP), or err.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
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
