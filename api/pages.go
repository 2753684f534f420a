package api

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// DefaultPageLimit is the page size of GET /api/v1/resources when a continue
// token comes without ?limit.
const DefaultPageLimit = 500

// MaxPageLimit is the largest ?limit GET /api/v1/resources accepts.
const MaxPageLimit = 10000

// pageToken is the content of a continue token: where the next page starts
// and a digest of the filters it was issued for. It travels base64url-encoded
// and is opaque to clients.
type pageToken struct {
	V      int    `json:"v"`
	After  string `json:"a,omitempty"` // resources: the last key served
	Before uint64 `json:"b,omitempty"` // runs: the last ID served
	Filter string `json:"f,omitempty"` // digest of the filters
}

func encodeToken(t pageToken) string {
	t.V = 1
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

var errToken = errors.New("invalid continue token")

func decodeToken(s, filter string) (pageToken, error) {
	var t pageToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &t) != nil || t.V != 1 {
		return t, fmt.Errorf("%w %q: pass the continue value of the previous answer unchanged", errToken, s)
	}
	if t.Filter != filter {
		return t, fmt.Errorf("%w: it was issued for other filters; send the same namespace, kind, ready and name as the first page", errToken)
	}
	return t, nil
}

func filterDigest(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(h[:8])
}

// pageLimit parses ?limit (def when absent) within 1..max.
func pageLimit(q string, def, max int) (int, error) {
	if q == "" {
		return def, nil
	}
	n, err := strconv.Atoi(q)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("invalid limit=%q: want 1..%d", q, max)
	}
	return n, nil
}

// stream writes a JSON object {"items":[...], tail...} item by item through
// a buffer, so that a long list is never held as one answer in memory.
type stream struct {
	w     *bufio.Writer
	n     int
	errOn error
}

func (s *server) startStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	st := &stream{w: bufio.NewWriterSize(w, 32<<10)}
	_, st.errOn = st.w.WriteString(`{"items":[`)
	return st
}

func (st *stream) item(v any) {
	if st.errOn != nil {
		return
	}
	b, err := json.Marshal(v)
	if err != nil {
		st.errOn = err
		return
	}
	if st.n > 0 {
		_ = st.w.WriteByte(',')
	}
	st.n++
	_, st.errOn = st.w.Write(b)
}

// end closes the items and adds the fields of tail (a map or struct
// encoded as an object, whose braces are dropped).
func (st *stream) end(tail any) error {
	if st.errOn != nil {
		return st.errOn
	}
	_, _ = st.w.WriteString("]")
	if tail != nil {
		b, err := json.Marshal(tail)
		if err != nil {
			return err
		}
		if len(b) > 2 {
			_ = st.w.WriteByte(',')
			_, _ = st.w.Write(b[1 : len(b)-1])
		}
	}
	_, _ = st.w.WriteString("}\n")
	return st.w.Flush()
}

// abort ends a streamed answer that failed after its status was sent: the
// connection is cut so that the client sees a truncated answer, not a
// complete wrong one.
func (s *server) abort(r *http.Request, err error) {
	s.log.ErrorContext(r.Context(), "api answer cut short", "method", r.Method, "path", r.URL.Path, "error", err)
	panic(http.ErrAbortHandler)
}

// maxCachedItems is the largest page of GET /api/v1/resources kept encoded
// (about 0.5 MB at 1,000 resources); a larger one, or the whole list, is
// streamed from the index.
const maxCachedItems = 1000

// listResources is GET /api/v1/resources; see the package documentation.
func (s *server) listResources(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ready, err := record.ParseReady(q.Get("ready"))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("invalid ready=%q: want true, false or unknown", q.Get("ready")))
		return
	}
	pq := pageQuery{ns: q.Get("namespace"), kind: q.Get("kind"), ready: ready, lname: strings.ToLower(q.Get("name"))}
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	if pq.ns != "" && !sc.Allows(pq.ns) {
		s.refuse(w, r, access.Read, []string{pq.ns}, record.AuditEvent{})
		return
	}
	if !sc.All() {
		pq.allow = sc.Allows
	}
	digest := filterDigest(pq.ns, strings.ToLower(pq.kind), ready, pq.lname, sc.Key())
	paged := q.Has("limit") || q.Has("continue")
	if paged {
		if pq.limit, err = pageLimit(q.Get("limit"), DefaultPageLimit, MaxPageLimit); err != nil {
			s.writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
			return
		}
		if c := q.Get("continue"); c != "" {
			t, err := decodeToken(c, digest)
			if err != nil || t.After == "" {
				if err == nil {
					err = fmt.Errorf("%w: it is not a resources token", errToken)
				}
				s.writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
				return
			}
			pq.after = t.After
		}
	}
	snap, err := s.index.current(s.db)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	// tail ends the answer: the continue token of a page that is not the
	// last.
	tail := func(items []*entry, more bool) []byte {
		var t struct {
			Continue string `json:"continue,omitempty"`
		}
		if paged && more {
			t.Continue = encodeToken(pageToken{After: items[len(items)-1].key, Filter: digest})
		}
		b, _ := json.Marshal(t)
		return b
	}
	key := strings.Join([]string{pq.ns, strings.ToLower(pq.kind), ready, pq.lname, pq.after, strconv.Itoa(pq.limit), sc.Key()}, "\x00")
	if paged && pq.limit <= maxCachedItems {
		s.serveAnswer(w, r, &s.pages, snap.version, key, func() ([]byte, error) {
			items, more := snap.page(pq)
			enc, err := encodeItems(s.db, items, true)
			if err != nil {
				return nil, err
			}
			var buf bytes.Buffer
			n := 16
			for _, b := range enc {
				n += len(b) + 1
			}
			buf.Grow(n + 128)
			err = s.writeItems(&buf, enc, nil, tail(items, more))
			return buf.Bytes(), err
		})
		return
	}
	// A larger answer is kept gzip-encoded only, or streamed from the index
	// through a small buffer, its items encoded as they are written.
	if acceptsGzip(r) {
		a, err := s.pages.gzipAnswer(snap.version, key, func(w io.Writer) error {
			items, more := snap.page(pq)
			bw := bufWriters.Get().(*bufio.Writer)
			defer bufWriters.Put(bw)
			bw.Reset(w)
			err := s.writeItems(bw, nil, items, tail(items, more))
			if ferr := bw.Flush(); err == nil {
				err = ferr
			}
			bw.Reset(io.Discard)
			return err
		})
		if err != nil {
			s.internal(w, r, err)
			return
		}
		writeAnswer(w, r, a, true)
		return
	}
	items, more := snap.page(pq)
	jsonHeaders(w)
	w.Header().Add("Vary", "Accept-Encoding")
	w.WriteHeader(http.StatusOK)
	bw := bufWriters.Get().(*bufio.Writer)
	bw.Reset(w)
	err = s.writeItems(bw, nil, items, tail(items, more))
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	bw.Reset(io.Discard)
	bufWriters.Put(bw)
	if err != nil {
		s.abort(r, err)
	}
}

// releaseEvery is how many records a long list reads between two drops of
// the state file's pages from the resident set.
const releaseEvery = 8 * encodeChunk

// writeItems writes {"items":[...]} with the encoded items enc, or else
// those of the entries es (encoded encodeChunk at a time, not kept), and
// the fields of tail (an encoded object whose braces are dropped). A
// resource deleted since the index was built is left out.
func (s *server) writeItems(w interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
}, enc [][]byte, es []*entry, tail []byte) error {
	_, _ = w.WriteString(`{"items":[`)
	n := 0
	write := func(enc [][]byte) {
		for _, b := range enc {
			if b == nil {
				continue
			}
			if n > 0 {
				_ = w.WriteByte(',')
			}
			n++
			_, _ = w.Write(b)
		}
	}
	write(enc)
	read := 0
	for len(es) > 0 {
		chunk := es[:min(len(es), encodeChunk)]
		es = es[len(chunk):]
		enc, err := encodeItems(s.db, chunk, false)
		if err != nil {
			return err
		}
		write(enc)
		// The state file's pages this list reads do not stay resident
		// (state.ReleasePages): the whole file at 100,000 resources.
		if read += len(chunk); read%releaseEvery == 0 || len(es) == 0 && read >= releaseEvery {
			if err := s.db.ReleasePages(); err != nil {
				s.log.Debug("releasing the state file's pages", "error", err)
			}
		}
	}
	_ = w.WriteByte(']')
	if len(tail) > 2 {
		_ = w.WriteByte(',')
		_, _ = w.Write(tail[1 : len(tail)-1])
	}
	_, _ = w.WriteString("}\n")
	return nil
}

// listRuns is GET /api/v1/runs; see the package documentation.
func (s *server) listRuns(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	limit, err := pageLimit(q.Get("limit"), DefaultRunsLimit, MaxRunsLimit)
	if err != nil {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
		return
	}
	var before uint64
	if c := q.Get("continue"); c != "" {
		t, err := decodeToken(c, "runs")
		if err != nil || t.Before == 0 {
			if err == nil {
				err = fmt.Errorf("%w: it is not a runs token", errToken)
			}
			s.writeError(w, http.StatusBadRequest, CodeBadRequest, err.Error())
			return
		}
		before = t.Before
	}
	runs, more, err := s.db.RunPage(before, limit)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	applied, err := s.db.LastGoodRevision()
	if err != nil {
		s.internal(w, r, err)
		return
	}
	refused, isRefused, err := s.db.Refused()
	if err != nil {
		s.internal(w, r, err)
		return
	}
	st := s.startStream(w)
	for _, run := range runs {
		st.item(runView(run, sc))
	}
	tail := struct {
		// Applied is the revision in force: the last one applied, which a
		// refused or held revision leaves in place.
		Applied string `json:"applied,omitempty"`
		// Refused is the run that refused the newest revision, while no
		// later revision rendered (runs of the applied revision that
		// follow it do not end it).
		Refused  *record.Run `json:"refused,omitempty"`
		Continue string      `json:"continue,omitempty"`
	}{Applied: applied}
	if isRefused {
		refused = runView(refused, sc)
		tail.Refused = &refused
	}
	if more {
		tail.Continue = encodeToken(pageToken{Before: runs[len(runs)-1].ID, Filter: "runs"})
	}
	if err := st.end(tail); err != nil {
		s.abort(r, err)
	}
}

// RunDetail is GET /api/v1/runs/{id}: the run and the resources it touched.
type RunDetail struct {
	Run       record.Run       `json:"run"`
	Resources []record.Touched `json:"resources"`
	Applied   string           `json:"applied,omitempty"`
}

func (s *server) getRun(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	raw := mux.Vars(r)["id"]
	id, err := strconv.ParseUint(raw, 10, 64)
	if err != nil || id == 0 {
		s.writeError(w, http.StatusBadRequest, CodeBadRequest, fmt.Sprintf("invalid run id %q: want a positive integer", raw))
		return
	}
	run, touched, ok, err := s.db.Run(id)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if !ok {
		s.writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("run %d not found (runs beyond the newest kept are pruned)", id))
		return
	}
	applied, err := s.db.LastGoodRevision()
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if touched == nil {
		touched = []record.Touched{}
	}
	s.writeJSON(w, http.StatusOK, RunDetail{Run: runView(run, sc), Resources: touchedView(touched, sc), Applied: applied})
}

// Graph is GET /api/v1/graph: every resource and its dependencies, in
// columns so that 10,000 resources stay small. Node i is Keys[i]
// ("namespace/group/Kind/name") with Ready[i] its Ready status (T, F or U);
// an edge [i, j] says node i depends on node j: in Owners j is i's owner
// (its ARM parent), in References any other dependency.
type Graph struct {
	Keys       []string `json:"keys"`
	Ready      string   `json:"ready"`
	Owners     [][2]int `json:"owners"`
	References [][2]int `json:"references"`
}

func (s *server) graph(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	snap, err := s.index.current(s.db)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.serveAnswer(w, r, &s.graphs, snap.version, sc.Key(), func() ([]byte, error) {
		nodes, err := snap.scoped(sc).nodes(s.db)
		if err != nil {
			return nil, err
		}
		return encodeLine(buildGraph(nodes))
	})
}

// encodeLine returns v as JSON and a newline.
func encodeLine(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

func buildGraph(nodes []state.Node) Graph {
	g := Graph{Keys: make([]string, len(nodes)), Owners: [][2]int{}, References: [][2]int{}}
	idx := make(map[string]int, len(nodes))
	ready := make([]byte, len(nodes))
	for i, n := range nodes {
		g.Keys[i] = n.Key
		idx[n.Key] = i
		ready[i] = n.Ready[0]
	}
	g.Ready = string(ready)
	for i, n := range nodes {
		for _, d := range n.DependsOn {
			j, ok := idx[d]
			if !ok || j == i {
				continue
			}
			if owns(nodes[j].ARMID, n.ARMID) {
				g.Owners = append(g.Owners, [2]int{i, j})
			} else {
				g.References = append(g.References, [2]int{i, j})
			}
		}
	}
	return g
}

// owns reports whether the resource with ARM ID parent is the ARM parent
// (owner) of the one with ARM ID child: child's ID extends parent's.
func owns(parent, child string) bool {
	return parent != "" && len(child) > len(parent)+1 && child[len(parent)] == '/' && strings.EqualFold(child[:len(parent)], parent)
}

// Summary is GET /api/v1/summary: how many resources have each Ready
// status, and the namespaces and kinds there are (for filters).
type Summary struct {
	Total      int            `json:"total"`
	Ready      map[string]int `json:"ready"`
	Namespaces []string       `json:"namespaces"`
	Kinds      []string       `json:"kinds"`
}

func (s *server) summary(w http.ResponseWriter, r *http.Request) {
	sc, ok := s.readable(w, r)
	if !ok {
		return
	}
	snap, err := s.index.current(s.db)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.serveAnswer(w, r, &s.summaries, snap.version, sc.Key(), func() ([]byte, error) {
		return encodeLine(snap.scoped(sc).summary())
	})
}
