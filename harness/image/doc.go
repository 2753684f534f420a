// Package image builds gitaso's container image offline with
// go-containerregistry: no base image, no registry, no Docker daemon.
//
// The image is one layer on scratch holding the static gitaso binary
// (/usr/local/bin/gitaso), a CA bundle (/etc/ssl/certs/ca-certificates.crt),
// /etc/passwd and /etc/group naming the user nonroot (65532:65532), and the
// directories /var/lib/gitaso (state, owned by nonroot) and /tmp. There is no
// shell and no package manager. The configuration runs gitaso serve as
// 65532:65532, exposes 8080/tcp and carries the OCI labels
// (org.opencontainers.image.*).
//
// Builds are reproducible: every timestamp (the config's created, the
// history, the files' modification times) is Options.Created, normally
// SOURCE_DATE_EPOCH or the commit time, so the same binary and CA bundle give
// the same digest.
//
//	img, err := image.Build(image.Options{
//		Binary:  "bin/linux_amd64/gitaso",
//		CACerts: "/etc/ssl/certs/ca-certificates.crt",
//		Version: "v1.2.3", Revision: sha, Created: commitTime,
//	})
//	...
//	err = image.WriteLayout("bin/image/oci", "gitaso:v1.2.3", img)
//	err = image.WriteTarball("bin/image/gitaso.tar", "gitaso:v1.2.3", img)
//
// make image does this through cmd/mkimage (docs/deploy.md).
package image
