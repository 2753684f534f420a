package image

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths and identity inside the image.
const (
	BinaryPath  = "/usr/local/bin/gitaso"
	CACertsPath = "/etc/ssl/certs/ca-certificates.crt"
	StateDir    = "/var/lib/gitaso"
	// UID and GID of the user nonroot (distroless's nonroot).
	UID = 65532
	GID = 65532
	// Port is the HTTP API's port (serve --listen 0.0.0.0:8080).
	Port = 8080
)

// Label keys (OCI image spec, annotations.md).
const (
	LabelTitle    = "org.opencontainers.image.title"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelSource   = "org.opencontainers.image.source"
	LabelCreated  = "org.opencontainers.image.created"
	LabelLicenses = "org.opencontainers.image.licenses"
)

// ErrNotStatic is returned by Build (and CheckBinary) when the binary is an
// ELF file that asks for a dynamic loader: it would not start in an image
// without a libc. Build it with CGO_ENABLED=0.
var ErrNotStatic = errors.New("binary is dynamically linked (build it with CGO_ENABLED=0)")

// ErrWrongArch is returned when the binary's ELF machine is not the
// platform's architecture.
var ErrWrongArch = errors.New("binary is for another architecture")

// Options say what goes into the image.
type Options struct {
	// Binary is the path of the gitaso binary (linux, static).
	Binary string
	// CACerts is the path of the PEM CA bundle copied to CACertsPath.
	CACerts string
	// Version, Revision (the Git commit), Source (the repository URL) and
	// Licenses (an SPDX expression) fill the OCI labels.
	Version, Revision, Source, Licenses string
	// Created is every timestamp of the image (reproducible builds).
	Created time.Time
	// OS and Arch are the platform (linux, amd64 by default).
	OS, Arch string
	// CheckELF refuses a binary that is not a static ELF executable for Arch.
	// Off for tests that package a fake binary.
	CheckELF bool
}

// DefaultOptions returns the options of a release image but the binary,
// version, revision and time.
func DefaultOptions() Options {
	return Options{
		CACerts:  "/etc/ssl/certs/ca-certificates.crt",
		Source:   "https://github.com/gitaso/gitaso",
		Licenses: "Apache-2.0",
		OS:       "linux",
		Arch:     "amd64",
		CheckELF: true,
	}
}

// Build assembles the image. It reads the binary and the CA bundle once;
// the layer is kept in memory.
func Build(o Options) (v1.Image, error) {
	if o.OS == "" {
		o.OS = "linux"
	}
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	bin, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("read the gitaso binary: %w", err)
	}
	if o.CheckELF {
		if err := CheckBinary(o.Binary, o.Arch); err != nil {
			return nil, err
		}
	}
	ca, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("read the CA bundle: %w", err)
	}
	if !bytes.Contains(ca, []byte("-----BEGIN CERTIFICATE-----")) {
		return nil, fmt.Errorf("CA bundle %s holds no PEM certificate", o.CACerts)
	}
	created := o.Created.UTC().Truncate(time.Second)
	layerTar, err := rootfs(bin, ca, created)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("image layer: %w", err)
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   v1.Time{Time: created},
			CreatedBy: "gitaso harness/image (make image)",
			Comment:   "gitaso " + o.Version + ", CA bundle, nonroot user",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("append the layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("image config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = o.OS, o.Arch
	cf.Created = v1.Time{Time: created}
	cf.Author = ""
	labels := map[string]string{
		LabelTitle:    "gitaso",
		LabelVersion:  o.Version,
		LabelRevision: o.Revision,
		LabelSource:   o.Source,
		LabelCreated:  created.Format(time.RFC3339),
		LabelLicenses: o.Licenses,
	}
	for k, v := range labels {
		if v == "" {
			delete(labels, k)
		}
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint:   []string{BinaryPath},
		Cmd:          []string{"serve"},
		WorkingDir:   StateDir,
		Env:          []string{"PATH=/usr/local/bin", "SSL_CERT_FILE=" + CACertsPath, "HOME=" + StateDir},
		ExposedPorts: map[string]struct{}{fmt.Sprintf("%d/tcp", Port): {}},
		Labels:       labels,
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("set the image config: %w", err)
	}
	// The same labels as manifest annotations, which registries and
	// `oras`/`skopeo inspect` show without reading the config.
	return mutate.Annotations(img, labels).(v1.Image), nil
}

// CheckBinary returns ErrNotStatic when the ELF file at p has a dynamic
// loader (PT_INTERP) and ErrWrongArch when its machine is not arch's.
func CheckBinary(p, arch string) error {
	f, err := elf.Open(p)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable (build gitaso with GOOS=linux): %w", p, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s: %w", p, ErrNotStatic)
		}
	}
	want, ok := map[string]elf.Machine{
		"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "arm": elf.EM_ARM,
		"ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV,
	}[arch]
	if ok && f.Machine != want {
		return fmt.Errorf("%s: %w: %s, want %s (%s)", p, ErrWrongArch, f.Machine, want, arch)
	}
	return nil
}

// file is one entry of the layer.
type file struct {
	path     string // absolute, no trailing slash
	dir      bool
	mode     int64
	uid, gid int
	data     []byte
}

// rootfs returns the layer's uncompressed tar. Entries come in path order
// with fixed times and owners so the bytes depend only on the inputs.
func rootfs(bin, ca []byte, created time.Time) ([]byte, error) {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:%s:/sbin/nologin\n", UID, GID, StateDir)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", GID)
	files := []file{
		{path: "/etc", dir: true, mode: 0o755},
		{path: "/etc/passwd", mode: 0o644, data: []byte(passwd)},
		{path: "/etc/group", mode: 0o644, data: []byte(group)},
		// Go's resolver reads it (files before DNS, as glibc does).
		{path: "/etc/nsswitch.conf", mode: 0o644, data: []byte("hosts: files dns\n")},
		{path: "/etc/ssl", dir: true, mode: 0o755},
		{path: "/etc/ssl/certs", dir: true, mode: 0o755},
		{path: CACertsPath, mode: 0o644, data: ca},
		{path: "/tmp", dir: true, mode: 0o1777},
		{path: "/usr", dir: true, mode: 0o755},
		{path: "/usr/local", dir: true, mode: 0o755},
		{path: "/usr/local/bin", dir: true, mode: 0o755},
		{path: BinaryPath, mode: 0o755, data: bin},
		{path: "/var", dir: true, mode: 0o755},
		{path: "/var/lib", dir: true, mode: 0o755},
		{path: StateDir, dir: true, mode: 0o750, uid: UID, gid: GID},
	}
	sort.Slice(files, func(i, j int) bool { return files[i].path < files[j].path })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name:    path.Clean(f.path)[1:],
			Mode:    f.mode,
			Uid:     f.uid,
			Gid:     f.gid,
			ModTime: created,
			Format:  tar.FormatPAX,
		}
		if f.uid == UID {
			h.Uname, h.Gname = "nonroot", "nonroot"
		} else {
			h.Uname, h.Gname = "root", "root"
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.path, err)
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, fmt.Errorf("layer entry %s: %w", f.path, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("layer: %w", err)
	}
	return buf.Bytes(), nil
}

// Tag returns the reference name:version, with characters a tag cannot
// hold (e.g. '+') replaced by '-'.
func Tag(repo, version string) (name.Tag, error) {
	b := []byte(version)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '-'
		}
	}
	if len(b) == 0 {
		b = []byte("dev")
	}
	if len(b) > 128 {
		b = b[:128]
	}
	t, err := name.NewTag(repo+":"+string(b), name.WeakValidation)
	if err != nil {
		return name.Tag{}, fmt.Errorf("image tag %s:%s: %w", repo, b, err)
	}
	return t, nil
}

// WriteLayout writes img as an OCI image layout in dir (replacing what dir
// held), annotated with the tag (org.opencontainers.image.ref.name, which
// `skopeo copy oci:DIR:TAG` looks up) and the full name
// (io.containerd.image.name, the name `ctr images import` gives it).
func WriteLayout(dir string, tag name.Tag, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("clear %s: %w", dir, err)
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          containerdName(tag),
	})); err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	return nil
}

// containerdName is the name containerd (and so the kubelet) gives a
// reference: docker.io rather than go-containerregistry's index.docker.io.
func containerdName(tag name.Tag) string {
	reg := tag.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + tag.RepositoryStr() + ":" + tag.TagStr()
}

// WriteTarball writes img as a `docker load` tarball (also read by
// `podman load` and `ctr images import`) tagged tag.
func WriteTarball(file string, tag name.Tag, img v1.Image) error {
	if err := tarball.WriteToFile(file, tag, img); err != nil {
		return fmt.Errorf("image tarball %s: %w", file, err)
	}
	return nil
}

// Sizes are an image's compressed size (manifest, config and compressed
// layers: what a registry stores and a pull transfers) and uncompressed size
// (the layers' tar bytes: roughly the disk a runtime uses).
type Sizes struct {
	Compressed, Uncompressed int64
}

// Size measures img.
func Size(img v1.Image) (Sizes, error) {
	var s Sizes
	m, err := img.RawManifest()
	if err != nil {
		return s, fmt.Errorf("image manifest: %w", err)
	}
	c, err := img.RawConfigFile()
	if err != nil {
		return s, fmt.Errorf("image config: %w", err)
	}
	s.Compressed = int64(len(m) + len(c))
	layers, err := img.Layers()
	if err != nil {
		return s, fmt.Errorf("image layers: %w", err)
	}
	for _, l := range layers {
		n, err := l.Size()
		if err != nil {
			return s, fmt.Errorf("layer size: %w", err)
		}
		s.Compressed += n
		rc, err := l.Uncompressed()
		if err != nil {
			return s, fmt.Errorf("layer: %w", err)
		}
		u, err := io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return s, fmt.Errorf("layer: %w", err)
		}
		s.Uncompressed += u
	}
	return s, nil
}
