package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// maxChartYAML is the largest Chart.yaml read from an archive;
// maxScan is how much of an archive is decompressed looking for it.
const (
	maxChartYAML = 1 << 20
	maxScan      = 128 << 20
)

// chartOf returns a Chart for an archive, its name and version read from
// its Chart.yaml.
func (f *Fetcher) chartOf(archive []byte, digest, from string, cached bool) (*Chart, error) {
	if nv, ok := f.names.Load(digest); ok {
		n := nv.([2]string)
		return &Chart{Name: n[0], Version: n[1], Digest: digest, URL: from, Archive: archive, Cached: cached}, nil
	}
	md, err := archiveMetadata(archive)
	if err != nil {
		return nil, err
	}
	f.names.Store(digest, [2]string{md.Name, md.Version})
	return &Chart{Name: md.Name, Version: md.Version, Digest: digest, URL: from, Archive: archive, Cached: cached}, nil
}

// archiveMetadata reads <chart>/Chart.yaml from a chart archive (.tgz).
func archiveMetadata(archive []byte) (*chart.Metadata, error) {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return nil, fmt.Errorf("%w: not a chart archive (gzip): %v", ErrInvalid, err)
	}
	defer func() { _ = zr.Close() }()
	tr := tar.NewReader(io.LimitReader(zr, maxScan))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the archive has no Chart.yaml", ErrInvalid)
		}
		if err != nil {
			return nil, fmt.Errorf("%w: not a chart archive (tar): %v", ErrInvalid, err)
		}
		name := strings.TrimPrefix(h.Name, "./")
		dir, file, ok := strings.Cut(name, "/")
		if !ok || dir == "" || file != "Chart.yaml" || h.Typeflag != tar.TypeReg {
			continue
		}
		if h.Size > maxChartYAML {
			return nil, fmt.Errorf("%w: Chart.yaml: %d bytes", ErrTooLarge, h.Size)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxChartYAML))
		if err != nil {
			return nil, fmt.Errorf("%w: Chart.yaml: %v", ErrInvalid, err)
		}
		var md chart.Metadata
		if err := yaml.Unmarshal(b, &md); err != nil {
			return nil, fmt.Errorf("%w: Chart.yaml: %v", ErrInvalid, err)
		}
		if md.Name == "" || md.Version == "" {
			return nil, fmt.Errorf("%w: Chart.yaml needs a name and a version", ErrInvalid)
		}
		return &md, nil
	}
}
