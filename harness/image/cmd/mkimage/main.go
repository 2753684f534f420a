// Command mkimage builds gitaso's container image offline (package
// harness/image) and writes it as an OCI image layout and as a docker load
// tarball. make image runs it:
//
//	go run ./harness/image/cmd/mkimage -binary bin/linux_amd64/gitaso -version v1.2.3 \
//	    -revision $(git rev-parse HEAD) -created $(git log -1 --format=%ct)
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gitaso/gitaso/harness/image"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := Run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "mkimage:", err)
		os.Exit(1)
	}
}

// Run parses args, builds the image and writes it.
func Run(_ context.Context, args []string, out io.Writer) error {
	o := image.DefaultOptions()
	fs := flag.NewFlagSet("mkimage", flag.ContinueOnError)
	fs.StringVar(&o.Binary, "binary", "", "static linux gitaso binary (required)")
	fs.StringVar(&o.CACerts, "ca", o.CACerts, "PEM CA bundle copied to "+image.CACertsPath)
	fs.StringVar(&o.Version, "version", "dev", "version (label org.opencontainers.image.version and the tag)")
	fs.StringVar(&o.Revision, "revision", "", "Git commit (label org.opencontainers.image.revision)")
	fs.StringVar(&o.Source, "source", o.Source, "source repository URL (label org.opencontainers.image.source)")
	fs.StringVar(&o.Licenses, "licenses", o.Licenses, "SPDX license expression (label org.opencontainers.image.licenses)")
	fs.StringVar(&o.Arch, "arch", o.Arch, "GOARCH of the binary and the image platform")
	created := fs.String("created", os.Getenv("SOURCE_DATE_EPOCH"), "image time in Unix seconds (default $SOURCE_DATE_EPOCH; 0 when both are empty)")
	repo := fs.String("repo", "gitaso", "repository name of the tag in the tarball and the layout (REPO:VERSION)")
	layoutDir := fs.String("layout", "bin/image/oci", "OCI image layout directory written (replaced)")
	tarFile := fs.String("tarball", "bin/image/gitaso.tar", "docker load tarball written")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.Binary == "" {
		return fmt.Errorf("-binary is required")
	}
	if *created != "" {
		sec, err := strconv.ParseInt(*created, 10, 64)
		if err != nil {
			return fmt.Errorf("-created %q: want Unix seconds: %w", *created, err)
		}
		o.Created = time.Unix(sec, 0)
	} else {
		o.Created = time.Unix(0, 0)
	}
	img, err := image.Build(o)
	if err != nil {
		return err
	}
	tag, err := image.Tag(*repo, o.Version)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(*tarFile), 0o755); err != nil {
		return fmt.Errorf("create the tarball's directory: %w", err)
	}
	if err := image.WriteLayout(*layoutDir, tag, img); err != nil {
		return err
	}
	if err := image.WriteTarball(*tarFile, tag, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("image digest: %w", err)
	}
	size, err := image.Size(img)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "image    %s (linux/%s)\n", tag, o.Arch)
	fmt.Fprintf(out, "digest   %s\n", digest)
	fmt.Fprintf(out, "size     %s compressed, %s uncompressed\n", mib(size.Compressed), mib(size.Uncompressed))
	fmt.Fprintf(out, "layout   %s (skopeo copy oci:%s:%s docker-daemon:%s)\n", *layoutDir, *layoutDir, tag.TagStr(), tag)
	fmt.Fprintf(out, "tarball  %s (docker load -i %s)\n", *tarFile, *tarFile)
	return nil
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
}
