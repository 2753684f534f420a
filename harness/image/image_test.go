package image_test

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/gitaso/gitaso/harness/image"
)

// fixture writes a fake binary and a CA bundle and returns options for them.
func fixture(t *testing.T) image.Options {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "gitaso")
	if err := os.WriteFile(bin, []byte("not really gitaso\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(dir, "ca.crt")
	pem := "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	if err := os.WriteFile(ca, []byte(pem), 0o600); err != nil {
		t.Fatal(err)
	}
	o := image.DefaultOptions()
	o.Binary, o.CACerts, o.CheckELF = bin, ca, false
	o.Version, o.Revision = "v1.2.3", "0123456789abcdef0123456789abcdef01234567"
	o.Created = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	return o
}

type entry struct {
	Type     byte
	Mode     int64
	UID, GID int
	Size     int64
}

func TestBuildLayout(t *testing.T) {
	o := fixture(t)
	img, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "oci")
	tag, err := image.Tag("gitaso", o.Version)
	if err != nil {
		t.Fatal(err)
	}
	if err := image.WriteLayout(dir, tag, img); err != nil {
		t.Fatal(err)
	}
	// Read it back as a runtime would: from the layout's index.
	p, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 || im.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v1.2.3" ||
		im.Manifests[0].Annotations["io.containerd.image.name"] != "docker.io/library/gitaso:v1.2.3" {
		t.Fatalf("index manifests = %+v", im.Manifests)
	}
	back, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	// Digests, sizes and diff IDs agree with the blobs.
	if err := validate.Image(back); err != nil {
		t.Errorf("validate: %v", err)
	}
	if mt, _ := back.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := back.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Time.Equal(o.Created) {
		t.Errorf("platform %s/%s created %s", cf.OS, cf.Architecture, cf.Created)
	}
	wantCfg := v1.Config{
		User:         "65532:65532",
		Entrypoint:   []string{"/usr/local/bin/gitaso"},
		Cmd:          []string{"serve"},
		WorkingDir:   "/var/lib/gitaso",
		Env:          []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", "HOME=/var/lib/gitaso"},
		ExposedPorts: map[string]struct{}{"8080/tcp": {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":    "gitaso",
			"org.opencontainers.image.version":  "v1.2.3",
			"org.opencontainers.image.revision": o.Revision,
			"org.opencontainers.image.source":   "https://github.com/gitaso/gitaso",
			"org.opencontainers.image.created":  "2026-05-01T12:00:00Z",
			"org.opencontainers.image.licenses": "Apache-2.0",
		},
	}
	if d := cmp.Diff(wantCfg, cf.Config); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	m, err := back.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(wantCfg.Labels, m.Annotations); d != "" {
		t.Errorf("manifest annotations (-want +got):\n%s", d)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
		t.Fatalf("layers %+v", m.Layers)
	}

	got, contents := readLayer(t, back)
	want := map[string]entry{
		"etc/":                              {tar.TypeDir, 0o755, 0, 0, 0},
		"etc/group":                         {tar.TypeReg, 0o644, 0, 0, int64(len(contents["etc/group"]))},
		"etc/nsswitch.conf":                 {tar.TypeReg, 0o644, 0, 0, 17},
		"etc/passwd":                        {tar.TypeReg, 0o644, 0, 0, int64(len(contents["etc/passwd"]))},
		"etc/ssl/":                          {tar.TypeDir, 0o755, 0, 0, 0},
		"etc/ssl/certs/":                    {tar.TypeDir, 0o755, 0, 0, 0},
		"etc/ssl/certs/ca-certificates.crt": {tar.TypeReg, 0o644, 0, 0, 59},
		"tmp/":                              {tar.TypeDir, 0o1777, 0, 0, 0},
		"usr/":                              {tar.TypeDir, 0o755, 0, 0, 0},
		"usr/local/":                        {tar.TypeDir, 0o755, 0, 0, 0},
		"usr/local/bin/":                    {tar.TypeDir, 0o755, 0, 0, 0},
		"usr/local/bin/gitaso":              {tar.TypeReg, 0o755, 0, 0, 18},
		"var/":                              {tar.TypeDir, 0o755, 0, 0, 0},
		"var/lib/":                          {tar.TypeDir, 0o755, 0, 0, 0},
		"var/lib/gitaso/":                   {tar.TypeDir, 0o750, 65532, 65532, 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("layer (-want +got):\n%s", d)
	}
	if contents["usr/local/bin/gitaso"] != "not really gitaso\n" {
		t.Errorf("binary = %q", contents["usr/local/bin/gitaso"])
	}
	if !strings.Contains(contents["etc/passwd"], "nonroot:x:65532:65532:") || !strings.Contains(contents["etc/group"], "nonroot:x:65532:") {
		t.Errorf("passwd %q group %q", contents["etc/passwd"], contents["etc/group"])
	}
	for _, sh := range []string{"bin/sh", "bin/bash", "bin/busybox", "usr/bin/sh"} {
		if _, ok := got[sh]; ok {
			t.Errorf("image has a shell: /%s", sh)
		}
	}
}

// readLayer returns the entries of the image's single layer and the
// contents of its regular files.
func readLayer(t *testing.T, img v1.Image) (map[string]entry, map[string]string) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v", len(layers), err)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	entries, contents := map[string]entry{}, map[string]string{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		entries[h.Name] = entry{h.Typeflag, h.Mode, h.Uid, h.Gid, h.Size}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			contents[h.Name] = string(b)
		}
	}
	return entries, contents
}

func TestReproducible(t *testing.T) {
	o := fixture(t)
	digest := func() v1.Hash {
		img, err := image.Build(o)
		if err != nil {
			t.Fatal(err)
		}
		d, err := img.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	a, b := digest(), digest()
	if a != b {
		t.Fatalf("two builds of the same inputs: %s and %s", a, b)
	}
	o.Created = o.Created.Add(time.Second)
	if c := digest(); c == a {
		t.Errorf("another time gave the same digest %s", c)
	}
}

func TestTarball(t *testing.T) {
	o := fixture(t)
	img, err := image.Build(o)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := image.Tag("gitaso", "v1.2.3+dirty")
	if err != nil {
		t.Fatal(err)
	}
	if tag.String() != "gitaso:v1.2.3-dirty" {
		t.Errorf("tag %s", tag)
	}
	file := filepath.Join(t.TempDir(), "gitaso.tar")
	if err := image.WriteTarball(file, tag, img); err != nil {
		t.Fatal(err)
	}
	back, err := tarball.ImageFromPath(file, &tag)
	if err != nil {
		t.Fatal(err)
	}
	// docker load's format keeps the config and the layers; the manifest
	// is rebuilt by the reader.
	want, _ := img.ConfigName()
	if got, _ := back.ConfigName(); got != want {
		t.Errorf("tarball image config %s, want %s", got, want)
	}
	wl, _ := img.Layers()
	bl, err := back.Layers()
	if err != nil || len(bl) != 1 {
		t.Fatalf("tarball layers: %d, %v", len(bl), err)
	}
	wd, _ := wl[0].Digest()
	if bd, _ := bl[0].Digest(); bd != wd {
		t.Errorf("tarball layer %s, want %s", bd, wd)
	}
	s, err := image.Size(img)
	if err != nil {
		t.Fatal(err)
	}
	if s.Compressed <= 0 || s.Uncompressed <= 0 {
		t.Errorf("sizes %+v", s)
	}
}

func TestCheckBinary(t *testing.T) {
	o := fixture(t)
	o.CheckELF = true
	if _, err := image.Build(o); err == nil || !strings.Contains(err.Error(), "not an ELF") {
		t.Errorf("a text file as binary: %v", err)
	}
	if testing.Short() {
		t.Skip("builds a Go program")
	}
	// A real static binary passes; the wrong architecture does not.
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\nfunc main() {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, src)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64", "GOFLAGS=")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	if err := image.CheckBinary(bin, "amd64"); err != nil {
		t.Errorf("static amd64 binary: %v", err)
	}
	if err := image.CheckBinary(bin, "arm64"); !errors.Is(err, image.ErrWrongArch) {
		t.Errorf("amd64 binary checked as arm64: %v", err)
	}
	// A dynamically linked executable (the race-enabled test binary on linux
	// uses cgo, so it has an interpreter) is refused.
	if runtime.GOOS == "linux" {
		if exe, err := os.Executable(); err == nil {
			if err := image.CheckBinary(exe, runtime.GOARCH); err != nil && !errors.Is(err, image.ErrNotStatic) {
				t.Errorf("test binary: %v", err)
			}
		}
	}
}
