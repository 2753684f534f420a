package charts

import (
	"testing"
)

// FuzzParseIndex feeds index.yaml parsing (and version selection over its
// entries) arbitrary input: it must return an error or an index, never
// panic.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte("apiVersion: v1\nentries:\n  infra:\n  - apiVersion: v2\n    name: infra\n    version: 1.2.3\n    digest: abc\n    urls:\n    - charts/infra-1.2.3.tgz\n  - name: infra\n    version: 1.3.0-rc.1\n    urls: [https://x/infra.tgz]\n"))
	f.Add([]byte(`{"apiVersion":"v1","entries":{"a":[null,{"name":"a","version":"x"}]}}`))
	f.Add([]byte("apiVersion: v1\nentries: {a: [{name: a, version: 1.0.0, dependencies: [{name: b}, {name: b}]}]}\n"))
	f.Add([]byte("entries: 5\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		idx, err := parseIndex(raw)
		if err != nil {
			return
		}
		for _, cvs := range idx.Entries {
			var vs []string
			for _, cv := range cvs {
				vs = append(vs, cv.Version)
			}
			_, _ = pickVersion(vs, "")
			_, _ = pickVersion(vs, ">=0.0.0-0")
		}
	})
}

// FuzzArchiveMetadata feeds the Chart.yaml reader arbitrary archives.
func FuzzArchiveMetadata(f *testing.F) {
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte("not gzip"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		_, _ = archiveMetadata(raw)
	})
}
