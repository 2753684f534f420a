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
	building sync.Mutex // one answer built at a time (answer)

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
// generations and, beyond maxCacheBytes, every other answer. An answer over
// a quarter of maxCacheBytes is not kept.
func (c *answerCache) put(gen uint64, key string, a *answer) {
	n := len(a.body) + len(a.gz)
	limit := maxCacheBytes
	if n > limit/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.gen {
		return
	}
	if gen > c.gen || c.m == nil || c.bytes+n > limit {
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

// answer returns the answer key of generation gen, built by build when
// missing; with gz, one that has its gzip encoding (when the answer is
// large enough). Answers are built one at a time: a change of state that
// misses every kept answer at once costs one build of each, not one per
// request. Kept answers are never changed: one whose gzip encoding is first
// asked for is replaced by a new one that has it.
func (c *answerCache) answer(gen uint64, key string, gz bool, build func() ([]byte, error)) (*answer, error) {
	ok := func(a *answer) bool { return a != nil && (!gz || a.gz != nil || len(a.body) < minGzip) }
	if a := c.get(gen, key); ok(a) {
		return a, nil
	}
	c.building.Lock()
	defer c.building.Unlock()
	a := c.get(gen, key)
	if ok(a) {
		return a, nil
	}
	if a == nil {
		body, err := build()
		if err != nil {
			return nil, err
		}
		a = &answer{body: body}
	} else {
		a = &answer{body: a.body}
	}
	if gz && len(a.body) >= minGzip {
		a.gz = gzipBytes(a.body)
	}
	c.put(gen, key, a)
	return a, nil
}

// gzipAnswer returns the gzip-encoded answer key of generation gen, built
// by build (which writes the identity answer) when missing: an answer too
// large to keep whole, kept compressed only.
func (c *answerCache) gzipAnswer(gen uint64, key string, build func(w io.Writer) error) (*answer, error) {
	key += "\x00gzip"
	if a := c.get(gen, key); a != nil {
		return a, nil
	}
	c.building.Lock()
	defer c.building.Unlock()
	if a := c.get(gen, key); a != nil {
		return a, nil
	}
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(&buf)
	err := build(zw)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	zw.Reset(io.Discard)
	gzipWriters.Put(zw)
	if err != nil {
		return nil, err
	}
	a := &answer{gz: buf.Bytes()}
	c.put(gen, key, a)
	return a, nil
}

// serveAnswer answers from c the answer key of generation gen, built by
// build when missing, gzip-encoded when the client accepts it and the
// answer is large enough.
func (s *server) serveAnswer(w http.ResponseWriter, r *http.Request, c *answerCache, gen uint64, key string, build func() ([]byte, error)) {
	gz := acceptsGzip(r)
	a, err := c.answer(gen, key, gz, build)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeAnswer(w, r, a, gz)
}

// writeAnswer sends a (200): gzip-encoded when gz and a has that encoding.
func writeAnswer(w http.ResponseWriter, r *http.Request, a *answer, gz bool) {
	jsonHeaders(w)
	body := a.body
	if a.body == nil || len(a.body) >= minGzip {
		w.Header().Add("Vary", "Accept-Encoding")
	}
	if gz && a.gz != nil {
		body = a.gz
		w.Header().Set("Content-Encoding", "gzip")
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

var bufWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(io.Discard, 32<<10) }}
