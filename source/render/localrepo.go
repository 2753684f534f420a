package render

import (
	"path/filepath"
	"strings"
)

// localRepoKey is the key normRepoURL gives a repository named by a local
// path or file:// URL (gitaso --repo /srv/git/fleet, a GitRepository of
// file:///srv/git/fleet): "local:" and the absolute, clean path, without a
// trailing "/.git". Such a --repo is this repository for the GitRepositories
// that name the same path only; before, a local --repo gave no URL to
// compare, and every GitRepository (even ssh:// on another host) was taken
// for this repository (issue 25).
func localRepoKey(u string) string {
	p := strings.TrimPrefix(u, "file://")
	if abs, err := filepath.Abs(filepath.FromSlash(p)); err == nil {
		p = abs
	}
	p = filepath.ToSlash(filepath.Clean(p))
	p = strings.TrimSuffix(p, "/.git")
	return "local:" + p
}
