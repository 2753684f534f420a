package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/harness/hostile"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/internal/gittest"
)

// The alias bomb and the heap guard live in harness/hostile.
var (
	Bomb609     = hostile.Bomb609
	guardMemory = hostile.GuardMemory
)

// isLimit reports whether err holds a *LimitError of the named limit.
func isLimit(err error, name string) bool {
	for _, e := range diag.AsList(err) {
		var le *LimitError
		if errors.As(e, &le) && le.Limit == name && errors.Is(e, ErrLimit) {
			return true
		}
	}
	return false
}

// wantLimit checks that err refuses the revision with exactly one error,
// naming file (and line, when line > 0) and the limit.
func wantLimit(t *testing.T, err error, file string, line int, limit string) {
	t.Helper()
	var rerr *RevisionError
	if !errors.As(err, &rerr) {
		t.Fatalf("want a *RevisionError, got %T %v", err, err)
	}
	if len(rerr.Errors) != 1 {
		t.Fatalf("want one error, got %d:\n%v", len(rerr.Errors), err)
	}
	e := rerr.Errors[0]
	if e.File != file || (line > 0 && e.Line != line) {
		t.Errorf("error at %s:%d, want %s:%d: %v", e.File, e.Line, file, line, e)
	}
	if !isLimit(err, limit) || !strings.Contains(e.Error(), "limit "+limit+"=") || !strings.HasPrefix(e.Error(), file+":") {
		t.Errorf("error does not name the file and limit %s: %v", limit, e)
	}
}

// writeFiles writes files below root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, s := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// manyObjects is a file of n small ConfigMaps.
func manyObjects(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d\n  namespace: default\ndata:\n  key: value-%d\n", i, i)
	}
	return b.String()
}

func TestBomb609(t *testing.T) {
	if len(Bomb609) != 609 {
		t.Fatalf("bomb is %d bytes", len(Bomb609))
	}
}

func TestLimitsAliasBomb(t *testing.T) {
	guardMemory(t, 512<<20)
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"infra/bomb.yaml": Bomb609, "infra/rg.yaml": rgYAML})
	_, err := NewDir(root, "infra").Fetch(t.Context())
	wantLimit(t, err, "infra/bomb.yaml", 0, "yaml-nodes")
	if !strings.Contains(err.Error(), "aliases expanded") {
		t.Errorf("error does not say aliases: %v", err)
	}
	// The same with any renderer: the check runs before it.
	_, err = NewDir(root, "infra", WithRenderer(upperRenderer{})).Fetch(t.Context())
	wantLimit(t, err, "infra/bomb.yaml", 0, "yaml-nodes")

	// ParseFile on its own, and CheckFiles.
	if _, err := ParseFile("bomb.yaml", []byte(Bomb609)); !isLimit(err, "yaml-nodes") {
		t.Errorf("ParseFile: %v", err)
	}
	if err := CheckFiles(t.Context(), []File{{Path: "bomb.yaml", Data: []byte(Bomb609)}}, Limits{}); !isLimit(err, "yaml-nodes") {
		t.Errorf("CheckFiles: %v", err)
	}
}

func TestLimitsRecursiveAnchor(t *testing.T) {
	for _, text := range []string{
		"a: &a [*a]\n",
		"a: &a {b: *a}\n",
		"a: &a\n  b: &b\n    c: *a\n",
	} {
		err := CheckFiles(t.Context(), []File{{Path: "loop.yaml", Data: []byte(text)}}, Limits{})
		l := diag.AsList(err)
		if len(l) != 1 || l[0].File != "loop.yaml" || !strings.Contains(l[0].Msg, "refers to the anchor it is part of") {
			t.Errorf("%q: %v", text, err)
		}
		if _, err := ParseFile("loop.yaml", []byte(text)); err == nil {
			t.Errorf("ParseFile %q: no error", text)
		}
	}
}

func TestLimitsDepth(t *testing.T) {
	deepFlow := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\nx: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"
	var block strings.Builder
	block.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\nx:\n")
	for i := range 150 {
		fmt.Fprintf(&block, "%sk:\n", strings.Repeat(" ", i+1))
	}
	// Each alias nests the one before: 10 lines, 130 levels.
	var aliased strings.Builder
	aliased.WriteString("a0: &a0 " + strings.Repeat("[", 13) + strings.Repeat("]", 13) + "\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&aliased, "a%d: &a%d %s*a%d%s\n", i, i, strings.Repeat("[", 13), i-1, strings.Repeat("]", 13))
	}
	for name, tt := range map[string]struct {
		text string
		line int
	}{
		"flow":    {deepFlow, 4},
		"block":   {block.String(), 132},
		"aliases": {aliased.String(), 10},
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			writeFiles(t, root, map[string]string{"deep.yaml": tt.text})
			_, err := NewDir(root, "").Fetch(t.Context())
			wantLimit(t, err, "deep.yaml", tt.line, "yaml-depth")
			// Within a raised limit, the nesting itself is fine.
			if err := CheckFiles(t.Context(), []File{{Path: "deep.yaml", Data: []byte(tt.text)}}, Limits{MaxDepth: 1000}); err != nil {
				t.Errorf("MaxDepth 1000: %v", err)
			}
		})
	}
}

func TestLimitsFileSize(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"rg.yaml": rgYAML, "big.yaml": cmYAML + "  big: " + strings.Repeat("x", 2<<20) + "\n"})
	// A sparse file above the default limit: refused before it is read.
	f, err := os.Create(filepath.Join(root, "huge.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(DefaultLimits().MaxFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = NewDir(root, "").Fetch(t.Context())
	wantLimit(t, err, "huge.yaml", 0, "file-size")
	if !strings.Contains(err.Error(), "limit file-size=32MiB") {
		t.Errorf("error does not name the default: %v", err)
	}

	os.Remove(filepath.Join(root, "huge.yaml"))
	_, err = NewDir(root, "", WithLimits(Limits{MaxFileSize: 1 << 20})).Fetch(t.Context())
	wantLimit(t, err, "big.yaml", 0, "file-size")
	if !strings.Contains(err.Error(), "the file is 2.0MiB") {
		t.Errorf("error does not say the size: %v", err)
	}
	for _, lim := range []Limits{{MaxFileSize: -1}, {MaxFileSize: -1, MaxTotalSize: -1}} {
		snap, err := NewDir(root, "", WithLimits(lim)).Fetch(t.Context())
		if err != nil || len(snap.Objects) != 2 {
			t.Errorf("no file limit (%+v): %v", lim, err)
		}
	}
	if _, err := ParseFile("big.yaml", make([]byte, DefaultLimits().MaxFileSize+1)); !isLimit(err, "file-size") {
		t.Errorf("ParseFile: %v", err)
	}
}

func TestLimitsTotalSize(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{}
	for i := range 20 {
		files[fmt.Sprintf("f%02d.yaml", i)] = strings.Replace(rgYAML, "name: rg", fmt.Sprintf("name: rg%02d", i), 1)
	}
	writeFiles(t, root, files)
	size := int64(len(files["f00.yaml"]))
	lim := Limits{MaxTotalSize: 10*size + size/2}
	_, err := NewDir(root, "", WithLimits(lim)).Fetch(t.Context())
	wantLimit(t, err, "f10.yaml", 0, "total-size")
	if _, err := NewDir(root, "", WithLimits(Limits{MaxTotalSize: 20 * size})).Fetch(t.Context()); err != nil {
		t.Errorf("exactly the limit: %v", err)
	}
	// Build checks it too.
	var fs []File
	for p, s := range files {
		fs = append(fs, File{Path: p, Data: []byte(s)})
	}
	_, err = BuildWithLimits(t.Context(), "r1", fs, nil, lim)
	wantLimit(t, err, "f10.yaml", 0, "total-size")
}

// TestLimitsManyObjects: a file of 100,000 small objects is within the
// default limits; above a lowered one, the file gets one error, not one
// per document.
func TestLimitsManyObjects(t *testing.T) {
	guardMemory(t, 2<<30)
	n := 100_000
	if testing.Short() || raceEnabled {
		n = 20_000
	}
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"many.yaml": manyObjects(n)})
	snap, err := NewDir(root, "").Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Objects) != n {
		t.Errorf("%d objects", len(snap.Objects))
	}
	_, err = NewDir(root, "", WithLimits(Limits{MaxNodes: 100_000})).Fetch(t.Context())
	wantLimit(t, err, "many.yaml", 0, "yaml-nodes")
	if strings.Contains(err.Error(), "alias") {
		t.Errorf("error speaks of aliases: %v", err)
	}
	// The revision's total: once, naming the file where it is passed.
	writeFiles(t, root, map[string]string{"more.yaml": manyObjects(10)})
	_, err = NewDir(root, "", WithLimits(Limits{MaxTotalNodes: int64(n) * 15})).Fetch(t.Context())
	wantLimit(t, err, "more.yaml", 0, "total-yaml-nodes")
}

func TestLimitsBinaryFile(t *testing.T) {
	root := t.TempDir()
	bin := make([]byte, 4096)
	for i := range bin {
		bin[i] = byte(i * 7)
	}
	writeFiles(t, root, map[string]string{"rg.yaml": rgYAML, "blob.yaml": string(bin)})
	_, err := NewDir(root, "").Fetch(t.Context())
	l := diag.AsList(err)
	if len(l) != 1 || l[0].File != "blob.yaml" || !strings.Contains(l[0].Error(), "invalid YAML") {
		t.Errorf("binary file: %v", err)
	}
}

func TestDirSymlinks(t *testing.T) {
	outside := t.TempDir()
	writeFiles(t, outside, map[string]string{"secret.yaml": secretYAML})
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"infra/rg.yaml": rgYAML, "shared/cm.yaml": cmYAML})
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(root, filepath.FromSlash(name))); err != nil {
			t.Fatal(err)
		}
	}
	// Inside the root: followed, named where the link is.
	link("../shared/cm.yaml", "infra/cm.yaml")
	snap, err := NewDir(root, "infra").Fetch(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"infra/cm.yaml:1 team-a/ConfigMap/settings", "infra/rg.yaml:1 team-a/ResourceGroup/rg"}, ids(snap.Objects)); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}

	for _, tt := range []struct {
		name, target, want string
	}{
		{"outside.yaml", filepath.Join(outside, "secret.yaml"), "leads outside the directory source"},
		{"relative.yaml", "../../" + filepath.Base(outside) + "/secret.yaml", "leads outside the directory source"},
		{"zero.yaml", "/dev/zero", "leads outside the directory source"},
		{"dangling.yaml", "nope.yaml", "cannot be resolved"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			guardMemory(t, 256<<20)
			link(tt.target, "infra/"+tt.name)
			defer os.Remove(filepath.Join(root, "infra", tt.name))
			_, err := NewDir(root, "infra").Fetch(t.Context())
			var rerr *RevisionError
			if !errors.As(err, &rerr) || len(rerr.Errors) != 1 {
				t.Fatalf("want one error, got %v", err)
			}
			e := rerr.Errors[0]
			if e.File != "infra/"+tt.name || !strings.Contains(e.Msg, tt.want) {
				t.Errorf("got %v, want %q", e, tt.want)
			}
			if strings.Contains(err.Error(), "aHVudGVyMg") || strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the secret outside the root was read: %v", err)
			}
		})
	}

	// The root itself may be a symlink.
	rootLink := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(root, rootLink); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDir(rootLink, "infra").Fetch(t.Context()); err != nil {
		t.Errorf("root through a symlink: %v", err)
	}
	// A path that is a symlink leaving the root is refused.
	if err := os.Symlink(outside, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	if _, err := NewDir(root, "escape").Fetch(t.Context()); err == nil || !strings.Contains(err.Error(), "leads outside") {
		t.Errorf("path through a symlink out of the root: %v", err)
	}
}

func TestDirSpecialFiles(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"rg.yaml": rgYAML})
	if err := syscall.Mkfifo(filepath.Join(root, "fifo.yaml"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if err := os.Symlink("fifo.yaml", filepath.Join(root, "tofifo.yaml")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := NewDir(root, "").Fetch(ctx)
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("reading a FIFO hangs")
	}
	var got []string
	for _, e := range diag.AsList(err) {
		got = append(got, e.Error())
	}
	want := []string{
		"fifo.yaml: is a named pipe (FIFO), not a regular file: refused",
		"tofifo.yaml: is a named pipe (FIFO), not a regular file: refused",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	// A socket, too.
	if runtime.GOOS == "linux" {
		os.Remove(filepath.Join(root, "fifo.yaml"))
		os.Remove(filepath.Join(root, "tofifo.yaml"))
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(fd)
		if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: filepath.Join(root, "sock.yaml")}); err != nil {
			t.Skipf("bind: %v", err)
		}
		_, err = NewDir(root, "").Fetch(t.Context())
		if l := diag.AsList(err); len(l) != 1 || l[0].Error() != "sock.yaml: is a socket, not a regular file: refused" {
			t.Errorf("socket: %v", err)
		}
	}
}

func TestPathNotFoundError(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"infra/rg.yaml": rgYAML, "file/x.yaml": rgYAML})
	for _, p := range []string{"missing", "infra/rg.yaml", "infra/rg.yaml/x"} {
		_, err := NewDir(root, p).Fetch(t.Context())
		var pe *PathNotFoundError
		if !errors.As(err, &pe) || !errors.Is(err, ErrPathNotFound) {
			t.Fatalf("%s: want a *PathNotFoundError, got %T %v", p, err, err)
		}
		if want := (PathNotFoundError{Revision: DirRevision(nil), Path: p}); *pe != want {
			t.Errorf("got %+v, want %+v", *pe, want)
		}
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not name the path: %v", err)
		}
	}
	if _, err := NewDir(filepath.Join(root, "nope"), "").Fetch(t.Context()); err == nil || errors.Is(err, ErrPathNotFound) {
		t.Errorf("missing root: %v", err)
	}

	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	sha := repo.Commit(map[string]string{"infra/rg.yaml": rgYAML}, nil, "first")
	g, err := NewGit(GitOptions{URL: repo.URL(), Path: "clusters/prod", CABundle: srv.CABundle()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = g.Fetch(t.Context())
	var pe *PathNotFoundError
	if !errors.As(err, &pe) || !errors.Is(err, ErrPathNotFound) {
		t.Fatalf("git: want a *PathNotFoundError, got %T %v", err, err)
	}
	if want := (PathNotFoundError{Revision: sha, Path: "clusters/prod"}); *pe != want {
		t.Errorf("git: got %+v, want %+v", *pe, want)
	}
}

func TestGitLimits(t *testing.T) {
	guardMemory(t, 512<<20)
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("platform")
	ok := repo.Commit(map[string]string{"infra/rg.yaml": rgYAML, "infra/cm.yaml": cmYAML}, nil, "first")
	for _, withRenderer := range []bool{false, true} {
		t.Run(fmt.Sprintf("renderer=%v", withRenderer), func(t *testing.T) {
			newGit := func(lim Limits) *Git {
				opts := GitOptions{URL: repo.URL(), Path: "infra", CABundle: srv.CABundle(), Limits: lim, CacheDir: t.TempDir()}
				if withRenderer {
					opts.Renderer = upperRenderer{}
				}
				g, err := NewGit(opts)
				if err != nil {
					t.Fatal(err)
				}
				return g
			}
			if _, err := newGit(Limits{}).Fetch(t.Context()); err != nil {
				t.Fatalf("at %s: %v", ok, err)
			}
			// Blob size: known before reading.
			big, size := "infra/cm.yaml", len(cmYAML)
			if len(rgYAML) > size {
				big, size = "infra/rg.yaml", len(rgYAML)
			}
			g := newGit(Limits{MaxFileSize: int64(size - 1)})
			_, err := g.Fetch(t.Context())
			wantLimit(t, err, big, 0, "file-size")
			// Total size.
			_, err = newGit(Limits{MaxTotalSize: int64(len(cmYAML) + 1)}).Fetch(t.Context())
			wantLimit(t, err, "infra/rg.yaml", 0, "total-size")
		})
	}

	bomb := repo.Commit(map[string]string{"infra/bomb.yaml": Bomb609}, nil, "bomb")
	for _, withRenderer := range []bool{false, true} {
		opts := GitOptions{URL: repo.URL(), Path: "infra", CABundle: srv.CABundle()}
		if withRenderer {
			opts.Renderer = upperRenderer{}
		}
		g, _ := NewGit(opts)
		_, err := g.Fetch(t.Context())
		wantLimit(t, err, "infra/bomb.yaml", 0, "yaml-nodes")
		if rerr := (*RevisionError)(nil); !errors.As(err, &rerr) || rerr.Revision != bomb {
			t.Errorf("revision: %v", err)
		}
	}

	// Incremental: the total counts files parsed for an earlier commit.
	repo.Commit(map[string]string{"infra/many.yaml": manyObjects(1000)}, []string{"infra/bomb.yaml"}, "many")
	g, err := NewGit(GitOptions{URL: repo.URL(), Path: "infra", CABundle: srv.CABundle(), Limits: Limits{MaxTotalNodes: 16_000}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.Fetch(t.Context()); err != nil {
		t.Fatal(err)
	}
	repo.Commit(map[string]string{"infra/zz.yaml": manyObjects(100)}, nil, "more")
	_, err = g.Fetch(t.Context())
	wantLimit(t, err, "infra/zz.yaml", 0, "total-yaml-nodes")
}

func TestSetLimit(t *testing.T) {
	var l Limits
	for _, s := range []string{"file-size=64MiB", "total-size=1GiB", "yaml-nodes=8M", "total-yaml-nodes=none", "yaml-depth=200", "kustomize-objects=20k"} {
		if err := l.SetLimit(s); err != nil {
			t.Fatal(err)
		}
	}
	want := Limits{MaxFileSize: 64 << 20, MaxTotalSize: 1 << 30, MaxNodes: 8_000_000, MaxTotalNodes: -1, MaxDepth: 200, MaxKustomizeObjects: 20_000}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	var viaFlag Limits
	if err := viaFlag.Set("file-size=64MiB,total-size=1GiB"); err != nil {
		t.Fatal(err)
	}
	if err := viaFlag.Set("yaml-nodes=8M, total-yaml-nodes=-1,yaml-depth=200,kustomize-objects=20k"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, viaFlag); diff != "" {
		t.Errorf("Set (-want +got):\n%s", diff)
	}
	if got, want := viaFlag.String(), "file-size=64MiB,total-size=1GiB,yaml-nodes=8000000,total-yaml-nodes=none,yaml-depth=200,kustomize-objects=20000"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	for _, s := range []string{"file-size", "nope=1", "file-size=big", "yaml-nodes=-5", "file-size=99999999999GiB"} {
		if err := l.SetLimit(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	if got := (Limits{MaxNodes: -1}).WithDefaults(); got.MaxNodes <= 1<<40 || got.MaxDepth != 128 {
		t.Errorf("WithDefaults: %+v", got)
	}
}

// TestSetRenderLimits: the render stage's limits (issue 26) are set and
// printed by name, the deadline as a duration.
func TestSetRenderLimits(t *testing.T) {
	var l Limits
	if err := l.Set("total-kustomize-objects=5k,kustomize-nodes=1M,rendered-size=32MiB,helm-bytes=1GiB,helm-steps=none,render-timeout=90s"); err != nil {
		t.Fatal(err)
	}
	want := Limits{MaxTotalKustomizeObjects: 5000, MaxKustomizeNodes: 1_000_000, MaxRenderedSize: 32 << 20,
		MaxHelmBytes: 1 << 30, MaxHelmSteps: -1, RenderTimeout: 90 * time.Second}
	if diff := cmp.Diff(want, l); diff != "" {
		t.Errorf("limits (-want +got):\n%s", diff)
	}
	if got, want := l.String(), "total-kustomize-objects=5000,kustomize-nodes=1000000,rendered-size=32MiB,helm-bytes=1GiB,helm-steps=none,render-timeout=1m30s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	d := l.WithDefaults()
	if d.MaxHelmSteps <= 1<<40 || d.RenderTimeout != 90*time.Second || d.MaxFileSize != 32<<20 {
		t.Errorf("WithDefaults: %+v", d)
	}
	if d := (Limits{}).WithDefaults(); d.RenderTimeout != 5*time.Minute || d.MaxKustomizeNodes != 750_000 || d.MaxTotalKustomizeObjects != 10_000 {
		t.Errorf("defaults: %+v", d)
	}
	if err := l.SetLimit("render-timeout=soon"); err == nil {
		t.Error("render-timeout=soon accepted")
	}
	e := &LimitError{Limit: "render-timeout", Max: int64(3 * time.Minute), What: "x"}
	if !strings.Contains(e.Error(), "limit render-timeout=3m0s") {
		t.Errorf("%v", e)
	}
}
