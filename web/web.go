package web

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"time"
)

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is sent with every response of Handler: the page loads
// only its own script and stylesheet and talks only to its own origin.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'"

type file struct {
	name  string
	ctype string
	etag  string
	body  []byte
}

// routes maps request paths to embedded files.
var routes = map[string]string{
	"/":           "index.html",
	"/index.html": "index.html",
	"/app.js":     "app.js",
	"/style.css":  "style.css",
}

// Handler returns the handler serving the status page and its assets. It is
// meant as api.Options.UI, which receives every path outside /api, /healthz,
// /readyz and /metrics.
func Handler() http.Handler {
	files := map[string]*file{}
	for p, name := range routes {
		f, err := load(name)
		if err != nil {
			// The files are embedded at build time; a missing one is a
			// programming error caught by the package tests.
			panic(fmt.Sprintf("web: %v", err))
		}
		files[p] = f
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		f, ok := files[r.URL.Path]
		if !ok {
			http.Error(w, "404 page not found", http.StatusNotFound)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			h.Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" is not allowed; use GET", http.StatusMethodNotAllowed)
			return
		}
		h.Set("Content-Type", f.ctype)
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", f.etag)
		// ServeContent answers If-None-Match with 304 and handles HEAD
		// and ranges; the zero time disables Last-Modified.
		http.ServeContent(w, r, f.name, time.Time{}, bytes.NewReader(f.body))
	})
}

func load(name string) (*file, error) {
	b, err := fs.ReadFile(staticFS, "static/"+name)
	if err != nil {
		return nil, fmt.Errorf("read embedded %s: %w", name, err)
	}
	sum := sha256.Sum256(b)
	ctype := mime.TypeByExtension(path.Ext(name))
	switch path.Ext(name) {
	case ".html":
		ctype = "text/html; charset=utf-8"
	case ".js":
		ctype = "text/javascript; charset=utf-8"
	case ".css":
		ctype = "text/css; charset=utf-8"
	}
	return &file{name: name, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, body: b}, nil
}
