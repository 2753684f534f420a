package api

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Answers derived from the whole state are kept encoded (and gzip-encoded
// for the clients that accept it) while the state they were built from
// holds: the graph and the summary per index version, the plan per
// CommitID, and the gzip-encoded pages of GET /api/v1/resources per index
// version and query. A cache holds at most maxCacheBytes; the answers of an
// older version are dropped when a newer one is stored.

const (
	// maxCacheBytes bounds one answer cache.
	maxCacheBytes = 32 << 20
	// minGzip is the smallest answer sent gzip-encoded: below, the header
	// costs more than it saves.
	minGzip = 1 << 10
)

// answer is one encoded answer: identity and, when the answer is large
// enough, gzip-encoded (nil until a client asks for it).
type answer struct {
	body []byte
	gz   []byte
}

// answerCache keeps answers of one generation (an index version or a
// CommitID) by key.
type answerCache struct {
	mu    sync.Mutex
	gen   uint64
	m     map[string]*answer
	bytes int
}

func (c *answerCache) get(gen uint64, key string) *answer {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen {
		return nil
	}
	return c.m[key]
}

// put stores a of generation gen under key, dropping the answers of older
// generations and, beyond maxCacheBytes, every other answer.
func (c *answerCache) put(gen uint64, key string, a *answer) {
	n := len(a.body) + len(a.gz)
	if n > maxCacheBytes/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.gen {
		return
	}
	if gen > c.gen || c.m == nil || c.bytes+n > maxCacheBytes {
		c.gen, c.m, c.bytes = gen, map[string]*answer{}, 0
	}
	if old := c.m[key]; old != nil {
		c.bytes -= len(old.body) + len(old.gz)
	}
	c.m[key] = a
	c.bytes += n
}

// acceptsGzip reports whether the request's Accept-Encoding takes gzip.
func acceptsGzip(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept-Encoding") {
		for part := range strings.SplitSeq(v, ",") {
			coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
			if !strings.EqualFold(strings.TrimSpace(coding), "gzip") {
				continue
			}
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
	return zw
}}

// gzipBytes returns b gzip-encoded.
func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/6 + 64)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	_, _ = zw.Write(b)
	_ = zw.Close()
	zw.Reset(io.Discard)
	gzipWriters.Put(zw)
	return buf.Bytes()
}

func jsonHeaders(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
}

// serveAnswer answers from c the answer key of generation gen, built by
// build when missing, gzip-encoded when the client accepts it and the
// answer is large enough. Cached answers are never changed: one whose gzip
// encoding is first asked for is replaced by a new one that has it.
func (s *server) serveAnswer(w http.ResponseWriter, r *http.Request, c *answerCache, gen uint64, key string, build func() ([]byte, error)) {
	a := c.get(gen, key)
	if a == nil {
		body, err := build()
		if err != nil {
			s.internal(w, r, err)
			return
		}
		a = &answer{body: body}
		c.put(gen, key, a)
	}
	jsonHeaders(w)
	body := a.body
	if len(a.body) >= minGzip {
		w.Header().Add("Vary", "Accept-Encoding")
		if acceptsGzip(r) {
			if a.gz == nil {
				a = &answer{body: a.body, gz: gzipBytes(a.body)}
				c.put(gen, key, a)
			}
			body = a.gz
			w.Header().Set("Content-Encoding", "gzip")
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

var bufWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, 32<<10) }}
