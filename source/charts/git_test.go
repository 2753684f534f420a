package charts_test

import (
	"bytes"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/gitaso/gitaso/internal/gittest"
	"github.com/gitaso/gitaso/source/charts"
)

// gitTag tags a commit of a bare repository (annotated with a message).
func gitTag(t testing.TB, bare, tag, sha string, annotated bool) {
	t.Helper()
	args := []string{"-c", "user.name=test", "-c", "user.email=test@example.com", "--git-dir", bare, "tag"}
	if annotated {
		args = append(args, "-a", "-m", "release "+tag)
	}
	args = append(args, tag, sha)
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		t.Fatalf("git tag: %v\n%s", err, out)
	}
}

func appFiles(version, depRepo string) map[string]string {
	return map[string]string{
		"charts/app/Chart.yaml": "apiVersion: v2\nname: app\nversion: " + version + "\ndependencies:\n" +
			"  - name: lib\n    version: 0.x\n    repository: file://../lib\n" +
			"  - name: remote\n    version: 1.x\n    repository: " + depRepo + "\n",
		"charts/app/values.yaml":             "replicas: 2\n",
		"charts/app/templates/cm.yaml":       "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"lib.name\" . }}\n",
		"charts/app/README.md":               "ignored by .helmignore\n",
		"charts/app/.helmignore":             "*.md\n",
		"charts/lib/Chart.yaml":              "apiVersion: v2\nname: lib\nversion: 0.2.0\ntype: library\n",
		"charts/lib/templates/_helpers.tpl":  "{{- define \"lib.name\" -}}{{ .Release.Name }}-lib{{- end -}}\n",
		"charts/other/Chart.yaml":            "apiVersion: v2\nname: other\nversion: 3.0.0\n",
		"charts/other/templates/secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: x\n",
		"charts/loop/Chart.yaml":             "apiVersion: v2\nname: loop\nversion: 1.0.0\ndependencies:\n  - name: loop\n    repository: file://.\n",
		"charts/escape/Chart.yaml":           "apiVersion: v2\nname: escape\nversion: 1.0.0\ndependencies:\n  - name: x\n    repository: file://../../../etc\n",
	}
}

func TestGitRepositoryChart(t *testing.T) {
	deps := newHelmRepo(t, true, "", "")
	deps.add(t, "remote", "1.4.0", "")
	srv := gittest.NewServer(t, gittest.WithBasicAuth("git", "git-token-789"))
	repo := srv.CreateRepo("charts")
	first := repo.Commit(appFiles("0.1.0", deps.URL()), nil, "app 0.1.0")
	gitTag(t, repo.Dir(), "v0.1.0", first, true)
	second := repo.Commit(map[string]string{"charts/app/Chart.yaml": appFiles("0.2.0", deps.URL())["charts/app/Chart.yaml"]}, nil, "app 0.2.0")
	gitTag(t, repo.Dir(), "v0.2.0", second, false)
	third := repo.Commit(map[string]string{"charts/other/values.yaml": "x: 1\n"}, nil, "other changes")

	dir := t.TempDir()
	f := newFetcher(t, deps.srv.Client(), func(o *charts.Options) { o.CABundle = srv.CABundle(); o.CacheDir = dir })
	secret := charts.Secret{"username": "git", "password": "git-token-789"}
	src := func(ref map[string]any) charts.Source {
		spec := map[string]any{"url": repo.URL()}
		if ref != nil {
			spec["ref"] = ref
		}
		return charts.Source{Kind: "GitRepository", Namespace: "flux-system", Name: "charts", Spec: spec, File: "git.yaml", Line: 7}
	}
	for _, tc := range []struct {
		name    string
		ref     map[string]any
		chart   string
		version string
		commit  string
	}{
		{"branch", map[string]any{"branch": "main"}, "charts/app", "0.2.0", third},
		{"semver", map[string]any{"semver": "<0.2.0"}, "./charts/app", "0.1.0", first},
		{"semver latest", map[string]any{"semver": "*"}, "charts/app", "0.2.0", second},
		{"tag", map[string]any{"tag": "v0.1.0"}, "charts/app", "0.1.0", first},
		{"name", map[string]any{"name": "refs/tags/v0.2.0"}, "charts/app", "0.2.0", second},
		{"commit", map[string]any{"commit": first, "branch": "main"}, "charts/app", "0.1.0", first},
		{"commit without branch", map[string]any{"commit": second}, "charts/app", "0.2.0", second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := f.Fetch(bg, charts.Request{Source: src(tc.ref), Secret: secret, Chart: tc.chart, Version: "9.x"})
			if err != nil {
				t.Fatal(err)
			}
			if c.Name != "app" || c.Version != tc.version || !strings.Contains(c.URL, "@"+tc.commit+":charts/app") {
				t.Fatalf("got %s %s from %s, want %s at %s", c.Name, c.Version, c.URL, tc.version, tc.commit)
			}
			ch, err := loader.LoadArchive(bytes.NewReader(c.Archive))
			if err != nil {
				t.Fatal(err)
			}
			var deps []string
			for _, d := range ch.Dependencies() {
				deps = append(deps, d.Name()+"@"+d.Metadata.Version)
			}
			slices.Sort(deps)
			if strings.Join(deps, ",") != "lib@0.2.0,remote@1.4.0" {
				t.Errorf("dependencies %v", deps)
			}
			for _, fl := range ch.Raw {
				if strings.HasSuffix(fl.Name, "README.md") {
					t.Errorf(".helmignore not applied: %s", fl.Name)
				}
			}
		})
	}
	// The branch's chart did not change between the second and third
	// commit: the same content packages to the same digest.
	c2, err := f.Fetch(bg, charts.Request{Source: src(map[string]any{"tag": "v0.2.0"}), Secret: secret, Chart: "charts/app"})
	if err != nil {
		t.Fatal(err)
	}
	c3, err := f.Fetch(bg, charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/app"})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Digest != c3.Digest || !c3.Cached {
		t.Errorf("v0.2.0 %s and main %s (cached %v): the same chart content should have one digest, served from the cache", c2.Digest, c3.Digest, c3.Cached)
	}

	// Cached by URL and commit: listing references only, no clone.
	srv.ResetRequests()
	c, err := f.Fetch(bg, charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/app"})
	if err != nil || !c.Cached {
		t.Fatalf("cached: %v", err)
	}
	for _, r := range srv.Requests() {
		if r.IsUploadPack() {
			t.Errorf("a cached chart cloned again: %s %s", r.Method, r.Path)
		}
	}
	// Another chart of the same commit comes from the clone kept in memory.
	clones := f.Stats().Clones
	if c, err := f.Fetch(bg, charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/other"}); err != nil || c.Version != "3.0.0" {
		t.Fatalf("other chart: %v", err)
	}
	if f.Stats().Clones != clones {
		t.Errorf("a second chart of the same commit cloned again")
	}

	// Offline: a new fetcher on the same cache, reaching nothing.
	off := newFetcher(t, nil, func(o *charts.Options) { o.CacheDir = dir; o.Offline = true })
	if c, err := off.Fetch(bg, charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/app"}); err != nil || !c.Cached || c.Version != "0.2.0" {
		t.Fatalf("offline: %v", err)
	}
	if _, err := off.Fetch(bg, charts.Request{Source: src(map[string]any{"tag": "v9"}), Secret: secret, Chart: "charts/app"}); !errors.Is(err, charts.ErrOffline) {
		t.Fatalf("offline, never resolved: %v", err)
	}

	for _, tc := range []struct {
		name   string
		req    charts.Request
		target error
		msg    string
	}{
		{"no credentials", charts.Request{Source: src(map[string]any{"branch": "main"}), Chart: "charts/app"}, charts.ErrAuth, ""},
		{"wrong password", charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: charts.Secret{"username": "git", "password": "nope-000"}, Chart: "charts/app"}, charts.ErrAuth, ""},
		{"default branch master", charts.Request{Source: src(nil), Secret: secret, Chart: "charts/app"}, charts.ErrNotFound, `branch "master" does not exist`},
		{"missing tag", charts.Request{Source: src(map[string]any{"tag": "v7"}), Secret: secret, Chart: "charts/app"}, charts.ErrNotFound, `spec.ref.tag "v7" does not exist`},
		{"no semver match", charts.Request{Source: src(map[string]any{"semver": "2.x"}), Secret: secret, Chart: "charts/app"}, charts.ErrNotFound, "available: v0.1.0, v0.2.0"},
		{"missing chart", charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/none"}, charts.ErrNotFound, `no directory "charts/none"`},
		{"outside", charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "../x"}, charts.ErrInvalid, "leaves the repository"},
		{"dependency cycle", charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/loop"}, charts.ErrInvalid, "cycle"},
		{"dependency escapes", charts.Request{Source: src(map[string]any{"branch": "main"}), Secret: secret, Chart: "charts/escape"}, charts.ErrInvalid, "leaves the repository"},
		{"ssh without a key", charts.Request{Source: charts.Source{Kind: "GitRepository", Name: "x", Spec: map[string]any{"url": "ssh://git@example.com/x.git"}}, Chart: "c"}, charts.ErrAuth, "identity"},
		{"ftp", charts.Request{Source: charts.Source{Kind: "GitRepository", Name: "x", Spec: map[string]any{"url": "ftp://example.com/x.git"}}, Chart: "c"}, charts.ErrUnsupported, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFetcher(t, deps.srv.Client(), func(o *charts.Options) { o.CABundle = srv.CABundle() })
			_, err := f.Fetch(bg, tc.req)
			if !errors.Is(err, tc.target) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %v %q", err, tc.target, tc.msg)
			}
			if strings.Contains(err.Error(), "git-token-789") || strings.Contains(err.Error(), "nope-000") {
				t.Fatalf("error shows a password: %v", err)
			}
		})
	}
}

// TestGitRepositoryPinnedCommit fetches an older commit of a branch with a
// fresh cache: the clone must reach that commit, not the branch's tip.
func TestGitRepositoryPinnedCommit(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("pinned")
	first := repo.Commit(map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 1.0.0\n"}, nil, "1.0.0")
	repo.Commit(map[string]string{"c/Chart.yaml": "apiVersion: v2\nname: c\nversion: 2.0.0\n"}, nil, "2.0.0")
	for _, ref := range []map[string]any{{"commit": first, "branch": "main"}, {"commit": first}} {
		f := newFetcher(t, nil, func(o *charts.Options) { o.CABundle = srv.CABundle() })
		src := charts.Source{Kind: "GitRepository", Name: "pinned", Spec: map[string]any{"url": repo.URL(), "ref": ref}}
		c, err := f.Fetch(bg, charts.Request{Source: src, Chart: "c"})
		if err != nil || c.Version != "1.0.0" || !strings.Contains(c.URL, first) {
			t.Fatalf("%v: %+v %v", ref, c, err)
		}
	}
	f := newFetcher(t, nil, func(o *charts.Options) { o.CABundle = srv.CABundle() })
	src := charts.Source{Kind: "GitRepository", Name: "pinned", Spec: map[string]any{"url": repo.URL(), "ref": map[string]any{"commit": strings.Repeat("1", 40)}}}
	if _, err := f.Fetch(bg, charts.Request{Source: src, Chart: "c"}); !errors.Is(err, charts.ErrNotFound) {
		t.Fatalf("missing commit: %v", err)
	}
}

func TestGitRepositoryBearerToken(t *testing.T) {
	srv := gittest.NewServer(t)
	repo := srv.CreateRepo("plain")
	repo.Commit(map[string]string{"Chart.yaml": "apiVersion: v2\nname: root\nversion: 1.0.0\n"}, nil, "root chart")
	f := newFetcher(t, nil, func(o *charts.Options) { o.CABundle = srv.CABundle() })
	src := charts.Source{Kind: "GitRepository", Name: "plain", Spec: map[string]any{"url": repo.URL(), "ref": map[string]any{"branch": "main"}}}
	c, err := f.Fetch(bg, charts.Request{Source: src, Secret: charts.Secret{"bearerToken": "t"}, Chart: "."})
	if err != nil || c.Name != "root" {
		t.Fatalf("chart at the root: %v", err)
	}
}
