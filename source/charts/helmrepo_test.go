package charts_test

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/gitaso/gitaso/source/charts"
)

func TestHTTPRepositorySemver(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	for _, v := range []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0", "2.1.0-beta.2"} {
		h.add(t, "infra", v, "")
	}
	h.add(t, "other", "0.1.0", "")
	f := newFetcher(t, h.srv.Client(), nil)
	for _, tc := range []struct {
		version string
		want    string
		err     string
	}{
		{"", "2.0.0", ""},
		{"*", "2.0.0", ""},
		{"1.x", "1.1.0", ""},
		{"~1.0", "1.0.0", ""},
		{">=1.2.0-0 <2.0.0", "1.2.0-rc.1", ""},
		{"1.2.0-rc.1", "1.2.0-rc.1", ""},
		{">=2.0.0-0", "2.1.0-beta.2", ""},
		{"^2", "2.0.0", ""},
		{"3.x", "", `HelmRepository flux-system/charts at repos.yaml:3: chart "infra" version "3.x": chart not found: no version matches (available: 1.0.0, 1.1.0, 1.2.0-rc.1, 2.0.0, 2.1.0-beta.2)`},
		{"not a version", "", `is not a semver constraint`},
	} {
		t.Run(tc.version, func(t *testing.T) {
			c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: tc.version})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := h.charts["infra@"+tc.want]
			if c.Name != "infra" || c.Version != tc.want || c.Digest != "sha256:"+sha(want) || !bytes.Equal(c.Archive, want) {
				t.Fatalf("got %s %s %s, want %s", c.Name, c.Version, c.Digest, tc.want)
			}
			if c.URL != h.URL()+"/charts/infra-"+tc.want+".tgz" {
				t.Fatalf("URL = %s", c.URL)
			}
			ch, err := loader.LoadArchive(bytes.NewReader(c.Archive))
			if err != nil || ch.Metadata.Version != tc.want {
				t.Fatalf("LoadArchive: %v", err)
			}
		})
	}
	_, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "nope"})
	if !errors.Is(err, charts.ErrNotFound) || !strings.Contains(err.Error(), `has no chart "nope" (charts: infra, other)`) {
		t.Fatalf("missing chart: %v", err)
	}
	if n := h.reqs.get("GET /index.yaml"); n != 1 {
		t.Errorf("index fetched %d times, want once within the TTL", n)
	}
}

func TestHTTPRepositoryIndexOnceArchiveOnce(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	h.add(t, "infra", "1.0.0", "")
	dir := t.TempDir()
	f := newFetcher(t, h.srv.Client(), func(o *charts.Options) { o.CacheDir = dir })
	var wg sync.WaitGroup
	errs := make([]error, 20)
	cached := make([]bool, 20)
	for i := range 20 {
		wg.Go(func() {
			c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.x"})
			errs[i] = err
			if err == nil {
				cached[i] = c.Cached
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := h.reqs.get("GET /index.yaml"); n != 1 {
		t.Errorf("index fetched %d times, want 1", n)
	}
	if n := h.reqs.get("GET /charts/infra-1.0.0.tgz"); n != 1 {
		t.Errorf("archive fetched %d times by concurrent fetches, want 1", n)
	}
	h.reqs.reset()
	c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.x"})
	if err != nil || !c.Cached {
		t.Fatalf("second fetch: cached=%v err=%v", c != nil && c.Cached, err)
	}
	if n := h.reqs.count("/charts/"); n != 0 {
		t.Errorf("a cached chart was downloaded again (%d requests)", n)
	}
	if got := cacheFiles(t, dir); len(got) != 1 || filepath.Base(got[0]) != strings.TrimPrefix(c.Digest, "sha256:")+".tgz" {
		t.Errorf("cache files %v", got)
	}
	st := f.Stats()
	if st.CacheHits < 1 || st.IndexFetches != 1 || st.Fetches != 21 {
		t.Errorf("stats %+v", st)
	}
}

func TestHTTPRepositoryRevalidatesIndexAndSeesNewVersion(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	h.add(t, "infra", "1.0.0", "")
	f := newFetcher(t, h.srv.Client(), func(o *charts.Options) { o.IndexTTL = -1 })
	for range 2 {
		if c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra"}); err != nil || c.Version != "1.0.0" {
			t.Fatalf("fetch: %v", err)
		}
	}
	if st := f.Stats(); st.IndexFetches != 1 || st.IndexNotModified != 1 || st.Downloads != 1 || st.CacheHits != 1 {
		t.Errorf("stats %+v: want one index download, one 304, one archive download, one cache hit", st)
	}
	h.add(t, "infra", "1.1.0", "")
	c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra"})
	if err != nil || c.Version != "1.1.0" || c.Cached {
		t.Fatalf("new version: %+v %v", c, err)
	}
}

func TestHTTPRepositoryBasicAuth(t *testing.T) {
	h := newHelmRepo(t, true, "reader", "s3cret-pass")
	other := newHelmRepo(t, true, "", "") // serves the archive from another host
	arch := buildChart(t, "infra", "1.0.0")
	other.addArchive(t, "infra", "1.0.0", arch, "")
	h.add(t, "infra", "1.0.0", "")
	h.baseURL = other.URL() + "/charts"
	h.addArchive(t, "elsewhere", "1.0.0", arch, "")

	f := newFetcher(t, h.srv.Client(), nil)
	_, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra"})
	if !errors.Is(err, charts.ErrAuth) {
		t.Fatalf("without credentials: %v", err)
	}
	secret := charts.Secret{"username": "reader", "password": "s3cret-pass"}
	c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Secret: secret, Chart: "infra"})
	if err != nil || c.Version != "1.0.0" {
		t.Fatalf("with credentials: %v", err)
	}
	// The chart of another host gets no credentials...
	other.reqs.reset()
	other.addArchive(t, "elsewhere", "1.0.0", arch, "")
	if _, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Secret: secret, Chart: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if other.reqs.authCount() != 0 {
		t.Errorf("credentials were sent to another host: %d", other.reqs.authCount())
	}
	// ... unless spec.passCredentials (a new fetcher: the first one has it cached).
	f2 := newFetcher(t, h.srv.Client(), nil)
	if _, err := f2.Fetch(bg, charts.Request{Source: h.source(map[string]any{"passCredentials": true}), Secret: secret, Chart: "elsewhere"}); err != nil {
		t.Fatal(err)
	}
	if other.reqs.authCount() != 1 {
		t.Errorf("passCredentials: %d requests with credentials on the other host, want 1", other.reqs.authCount())
	}
	_, err = f.Fetch(bg, charts.Request{Source: h.source(nil), Secret: charts.Secret{"username": "reader", "password": "wrong-pass-xyz"}, Chart: "infra"})
	if !errors.Is(err, charts.ErrAuth) || strings.Contains(err.Error(), "wrong-pass-xyz") {
		t.Fatalf("wrong password: %v", err)
	}
	if _, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Secret: charts.Secret{"username": "reader"}, Chart: "infra"}); !errors.Is(err, charts.ErrInvalid) {
		t.Fatalf("username without password: %v", err)
	}
}

func TestHTTPRepositoryDigestMismatch(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	h.add(t, "infra", "1.0.0", strings.Repeat("ab", 32))
	f := newFetcher(t, h.srv.Client(), nil)
	_, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.0.0"})
	if !errors.Is(err, charts.ErrDigest) {
		t.Fatalf("err = %v, want ErrDigest", err)
	}
	for _, want := range []string{"HelmRepository flux-system/charts at repos.yaml:3", `chart "infra"`, "infra 1.0.0 from " + h.URL(), "sha256:" + strings.Repeat("ab", 32)} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if f.Stats().Errors != 1 {
		t.Errorf("stats %+v", f.Stats())
	}
}

func TestHTTPRepositoryWithoutDigestCachesByURL(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	h.add(t, "infra", "1.0.0", "-")
	f := newFetcher(t, h.srv.Client(), nil)
	for i := range 2 {
		c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra"})
		if err != nil || c.Cached != (i == 1) {
			t.Fatalf("fetch %d: cached=%v err=%v", i, c != nil && c.Cached, err)
		}
	}
	if n := h.reqs.get("GET /charts/infra-1.0.0.tgz"); n != 1 {
		t.Errorf("archive downloaded %d times", n)
	}
}

// An http:// Helm repository (index, chart URLs, as a dependency too) is
// read as Flux reads it, without spec.insecure (which Flux documents for
// OCI repositories only), and the host is logged once as a warning; it
// was refused asking for spec.insecure (issue 25). Other schemes are not.
func TestHTTPRepositoryPlainHTTP(t *testing.T) {
	h := newHelmRepo(t, false, "", "")
	h.add(t, "infra", "1.0.0", "")
	var logs strings.Builder
	f := newFetcher(t, nil, func(o *charts.Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	if _, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra"}); err != nil {
		t.Fatalf("plain http: %v", err)
	}
	if _, err := f.FetchURL(bg, h.URL(), "infra", "1.x", nil); err != nil {
		t.Fatalf("dependency over plain http: %v", err)
	}
	if n := strings.Count(logs.String(), "reading over plain http://"); n != 1 {
		t.Errorf("%d warnings, want one for the host:\n%s", n, logs.String())
	}
	if _, err := f.Fetch(bg, charts.Request{Source: charts.Source{Kind: "HelmRepository", Name: "x", Spec: map[string]any{"url": "ftp://example.com"}}, Chart: "infra"}); !errors.Is(err, charts.ErrUnsupported) {
		t.Fatalf("ftp: %v", err)
	}
}

func TestHTTPRepositoryLimits(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	big := bytes.Repeat([]byte{0}, charts.MaxArchiveSize+1)
	h.addArchive(t, "huge", "1.0.0", big, "-")
	f := newFetcher(t, h.srv.Client(), nil)
	_, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "huge"})
	if !errors.Is(err, charts.ErrTooLarge) {
		t.Fatalf("huge archive: %v", err)
	}
	h.rawIdx = append([]byte("apiVersion: v1\nentries: {}\n# "), bytes.Repeat([]byte("x"), charts.MaxIndexSize)...)
	f2 := newFetcher(t, h.srv.Client(), nil)
	if _, err := f2.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "huge"}); !errors.Is(err, charts.ErrTooLarge) {
		t.Fatalf("huge index: %v", err)
	}
	h.rawIdx = []byte("entries: {}\n")
	f3 := newFetcher(t, h.srv.Client(), nil)
	if _, err := f3.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "huge"}); !errors.Is(err, charts.ErrInvalid) {
		t.Fatalf("index without apiVersion: %v", err)
	}
}

func TestHTTPRepositoryContextAndTimeout(t *testing.T) {
	slow := make(chan struct{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-slow:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	defer close(slow)
	f := newFetcher(t, srv.Client(), func(o *charts.Options) { o.Timeout = 200 * time.Millisecond })
	start := time.Now()
	src := charts.Source{Kind: "HelmRepository", Name: "slow", Spec: map[string]any{"url": srv.URL}}
	_, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra"})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("timeout: %v after %s", err, time.Since(start))
	}
}

func TestCacheCorruptEntryAndOffline(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	want := h.add(t, "infra", "1.0.0", "")
	h.add(t, "infra", "1.1.0", "")
	dir := t.TempDir()
	f := newFetcher(t, h.srv.Client(), func(o *charts.Options) { o.CacheDir = dir; o.IndexTTL = -1 })
	c, err := f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.0.x"})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "sha256", strings.TrimPrefix(c.Digest, "sha256:")+".tgz")
	if err := os.WriteFile(p, []byte("corrupt"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = f.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.0.x"})
	if err != nil || c.Cached || !bytes.Equal(c.Archive, want) {
		t.Fatalf("corrupt entry: cached=%v err=%v", c != nil && c.Cached, err)
	}
	if n := h.reqs.get("GET /charts/infra-1.0.0.tgz"); n != 2 {
		t.Errorf("archive downloaded %d times, want 2 (the corrupt entry is fetched again)", n)
	}
	if b, _ := os.ReadFile(p); !bytes.Equal(b, want) {
		t.Error("the corrupt entry was not replaced")
	}

	// Offline: a new process with the same cache, the server unreachable.
	h.reqs.reset()
	off := newFetcher(t, nil, func(o *charts.Options) { o.CacheDir = dir; o.Offline = true })
	c, err = off.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.0.x"})
	if err != nil || !c.Cached || c.Version != "1.0.0" {
		t.Fatalf("offline: %v", err)
	}
	if _, err := off.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra", Version: "1.1.x"}); !errors.Is(err, charts.ErrOffline) || !strings.Contains(err.Error(), "infra 1.1.0") {
		t.Fatalf("offline, version not cached: %v", err)
	}
	other := h.source(nil)
	other.Spec["url"] = "https://charts.example.invalid"
	if _, err := off.Fetch(bg, charts.Request{Source: other, Chart: "infra"}); !errors.Is(err, charts.ErrOffline) {
		t.Fatalf("offline, repository never seen: %v", err)
	}
	if n := h.reqs.count(""); n != 0 {
		t.Errorf("offline mode sent %d requests", n)
	}
	mem := newFetcher(t, nil, func(o *charts.Options) { o.Offline = true })
	if _, err := mem.Fetch(bg, charts.Request{Source: h.source(nil), Chart: "infra"}); !errors.Is(err, charts.ErrOffline) {
		t.Fatalf("offline without cache: %v", err)
	}
}

func TestFetchURLDependency(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	h.add(t, "lib", "0.3.1", "")
	f := newFetcher(t, h.srv.Client(), nil)
	c, err := f.FetchURL(bg, h.URL(), "lib", "0.x", nil)
	if err != nil || c.Version != "0.3.1" {
		t.Fatalf("FetchURL: %v", err)
	}
	_, err = f.FetchURL(bg, h.URL(), "lib", "1.x", nil)
	want := fmt.Sprintf(`dependency repository %s: chart "lib" version "1.x": chart not found: no version matches (available: 0.3.1)`, h.URL())
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
}

func TestSecretRedacted(t *testing.T) {
	s := charts.Secret{"password": "hunter2"}
	for _, got := range []string{fmt.Sprint(s), fmt.Sprintf("%v %+v %#v %s", s, s, s, s)} {
		if strings.Contains(got, "hunter2") {
			t.Fatalf("secret printed: %s", got)
		}
	}
	if diff := cmp.Diff("[1 keys redacted]", s.LogValue().String()); diff != "" {
		t.Error(diff)
	}
}

func TestHTTPRepositoryQueryTokenAndRedirects(t *testing.T) {
	h := newHelmRepo(t, true, "", "")
	h.add(t, "infra", "1.0.0", "")
	f := newFetcher(t, h.srv.Client(), nil)
	src := h.source(nil)
	src.Spec["url"] = h.URL() + "?sig=sas-token-321"
	c, err := f.Fetch(bg, charts.Request{Source: src, Chart: "infra"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.URL, "sas-token-321") || !strings.HasSuffix(c.URL, "?redacted") {
		t.Errorf("URL shows the query: %s", c.URL)
	}
	if _, err := f.Fetch(bg, charts.Request{Source: src, Chart: "none"}); err == nil || strings.Contains(err.Error(), "sas-token-321") {
		t.Errorf("error shows the query: %v", err)
	}

	plain := newHelmRepo(t, false, "", "")
	plain.add(t, "infra", "1.0.0", "")
	redirect := httptest.NewTLSServer(http.RedirectHandler(plain.URL()+"/index.yaml", http.StatusFound))
	t.Cleanup(redirect.Close)
	rsrc := charts.Source{Kind: "HelmRepository", Name: "redirect", Spec: map[string]any{"url": redirect.URL}}
	if _, err := f.Fetch(bg, charts.Request{Source: rsrc, Chart: "infra"}); !errors.Is(err, charts.ErrInsecure) {
		t.Fatalf("https → http redirect: %v", err)
	}
}
