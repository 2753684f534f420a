package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/web"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

func TestHandlerServesPageAndAssets(t *testing.T) {
	h := web.Handler()
	for _, tc := range []struct {
		path, ctype, contains string
	}{
		{"/", "text/html; charset=utf-8", `<script src="app.js" defer></script>`},
		{"/index.html", "text/html; charset=utf-8", "<title>gitaso status</title>"},
		{"/app.js", "text/javascript; charset=utf-8", "api/v1/sync"},
		{"/style.css", "text/css; charset=utf-8", "pre.plan"},
	} {
		resp := get(t, h, http.MethodGet, tc.path, nil)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d", tc.path, resp.StatusCode)
			continue
		}
		if got := resp.Header.Get("Content-Type"); got != tc.ctype {
			t.Errorf("GET %s: Content-Type %q, want %q", tc.path, got, tc.ctype)
		}
		if !strings.Contains(string(body), tc.contains) {
			t.Errorf("GET %s: body lacks %q", tc.path, tc.contains)
		}
		for k, want := range map[string]string{
			"Content-Security-Policy": web.ContentSecurityPolicy,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
			"Cache-Control":           "no-cache",
		} {
			if got := resp.Header.Get(k); got != want {
				t.Errorf("GET %s: %s = %q, want %q", tc.path, k, got, want)
			}
		}
	}
}

// Every local asset the page references is served, and nothing is loaded
// from another origin (the page must work air-gapped).
func TestPageReferencesOnlyLocalAssets(t *testing.T) {
	h := web.Handler()
	resp := get(t, h, http.MethodGet, "/", nil)
	page, _ := io.ReadAll(resp.Body)
	refs := regexp.MustCompile(`(?:src|href)="([^"#]*)"`).FindAllStringSubmatch(string(page), -1)
	if len(refs) < 2 {
		t.Fatalf("found only %d references in the page", len(refs))
	}
	for _, m := range refs {
		ref := m[1]
		switch {
		case ref == "" || ref == "data:" || strings.HasPrefix(ref, "data:"):
			continue
		case strings.Contains(ref, "//"):
			t.Errorf("page references another origin: %q", ref)
		case strings.HasPrefix(ref, "api/"), strings.HasPrefix(ref, "auth/"):
			continue // the API and sign-in, served by package api
		default:
			if r := get(t, h, http.MethodGet, "/"+ref, nil); r.StatusCode != http.StatusOK {
				t.Errorf("page references %q, which answers %d", ref, r.StatusCode)
			}
		}
	}
	for _, asset := range []string{"/app.js", "/style.css"} {
		b, _ := io.ReadAll(get(t, h, http.MethodGet, asset, nil).Body)
		if m := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/`).Find(b); m != nil {
			t.Errorf("%s references a remote URL: %s", asset, m)
		}
		if strings.Contains(string(b), "localStorage") || strings.Contains(string(b), "sessionStorage") || strings.Contains(string(b), "document.cookie") {
			t.Errorf("%s touches persistent browser storage", asset)
		}
	}
}

func TestHandlerConditionalHeadAndErrors(t *testing.T) {
	h := web.Handler()
	first := get(t, h, http.MethodGet, "/app.js", nil)
	etag := first.Header.Get("ETag")
	if !regexp.MustCompile(`^"[0-9a-f]{32}"$`).MatchString(etag) {
		t.Fatalf("ETag %q", etag)
	}
	if r := get(t, h, http.MethodGet, "/app.js", map[string]string{"If-None-Match": etag}); r.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match with the current ETag: %d, want 304", r.StatusCode)
	}
	if r := get(t, h, http.MethodGet, "/app.js", map[string]string{"If-None-Match": `"stale"`}); r.StatusCode != http.StatusOK {
		t.Errorf("If-None-Match with a stale ETag: %d, want 200", r.StatusCode)
	}
	head := get(t, h, http.MethodHead, "/", nil)
	if b, _ := io.ReadAll(head.Body); head.StatusCode != http.StatusOK || len(b) != 0 {
		t.Errorf("HEAD /: %d with %d body bytes", head.StatusCode, len(b))
	}
	if r := get(t, h, http.MethodPost, "/", nil); r.StatusCode != http.StatusMethodNotAllowed || r.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %d Allow=%q", r.StatusCode, r.Header.Get("Allow"))
	}
	for _, p := range []string{"/nope", "/static/app.js", "/../web.go", "/app.js/"} {
		if r := get(t, h, http.MethodGet, p, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, r.StatusCode)
		}
	}
}

// Mounted as api.Options.UI, the page answers outside /api while the API keeps
// its JSON errors.
func TestHandlerAsAPIUI(t *testing.T) {
	f := newFixture(t)
	resp, err := http.Get(f.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "gitaso status") {
		t.Errorf("GET /: %d %.80q", resp.StatusCode, b)
	}
	resp, err = http.Get(f.srv.URL + "/api/v1/nope")
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(b), `"not_found"`) {
		t.Errorf("GET /api/v1/nope: %d %s", resp.StatusCode, b)
	}
}

func BenchmarkHandlerIndex(b *testing.B) {
	h := web.Handler()
	req := httptest.NewRequest(http.MethodGet, "/app.js", nil)
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code)
		}
	}
}
