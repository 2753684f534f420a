package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"strings"
	"time"
)

// The check reads the file itself, with os.File.ReadAt and every offset
// bounded by the file, rather than through bbolt: bbolt trusts the page IDs
// it finds and reads them from its memory map, so a damaged page panics (a
// garbage ID out of range) or faults (a page past the end of a truncated
// file: SIGBUS, which recover() cannot catch), and tx.Check does the same
// from a goroutine of its own. The layout below is bbolt's file format
// (go.etcd.io/bbolt/internal/common, format version 2), in the machine's
// byte order as bbolt writes it.
const (
	boltMagic   = 0xED0CDAED
	boltVersion = 2

	pageHeaderSize  = 16 // id uint64, flags uint16, count uint16, overflow uint32
	branchElemSize  = 16 // pos uint32, ksize uint32, pgid uint64
	leafElemSize    = 16 // flags uint32, pos uint32, ksize uint32, vsize uint32
	inBucketSize    = 16 // root pgid uint64, sequence uint64
	metaChecksumOff = 56 // the meta's fields before its checksum, FNV-64a'd

	flagBranch   = 0x01
	flagLeaf     = 0x02
	flagMeta     = 0x04
	flagFreelist = 0x10
	flagBucket   = 0x01 // a leaf element that is a bucket

	noFreelist = ^uint64(0)

	// topLevel names the root tree, which holds the buckets.
	topLevel = "(top level)"
	// freelistName names the freelist page in a report.
	freelistName = "(freelist)"

	// maxProblems bounds what a report lists; the count says how many more.
	maxProblems = 20
	// readAheadFrom is the size in use from which the check has the file
	// read in order first (readahead.go): 271 MB from a cold disk in 0.3 to
	// 0.6 s instead of 2.4 s. Below it the scattered walk is as fast.
	readAheadFrom = 64 << 20
	// maxDepth bounds the tree walk: bbolt's trees are a few levels deep,
	// a loop in a damaged file is not.
	maxDepth = 64
)

var ne = binary.NativeEndian

// Problem is one thing found damaged: the page (0 when it is the file as a
// whole), the bucket it belongs to ("" for the file's own structure) and what
// is wrong.
type Problem struct {
	Page   uint64 `json:"page,omitempty"`
	Bucket string `json:"bucket,omitempty"`
	What   string `json:"what"`
}

func (p Problem) String() string {
	var b bytes.Buffer
	if p.Page != 0 {
		fmt.Fprintf(&b, "page %d", p.Page)
	}
	if p.Bucket != "" {
		if b.Len() > 0 {
			b.WriteString(" ")
		}
		if strings.HasPrefix(p.Bucket, "(") {
			b.WriteString(p.Bucket) // (top level), (freelist)
		} else {
			fmt.Fprintf(&b, "(bucket %s)", p.Bucket)
		}
	}
	if b.Len() > 0 {
		b.WriteString(": ")
	}
	b.WriteString(p.What)
	return b.String()
}

// Report is what a check of the state file found.
type Report struct {
	Path string `json:"path"`
	// Size is the file's length in bytes; PageSize and Pages (the high-water
	// mark) come from the meta page in use.
	Size     int64  `json:"size"`
	PageSize int    `json:"pageSize,omitempty"`
	Pages    uint64 `json:"pages,omitempty"`
	// Txid is the transaction the meta page in use records.
	Txid uint64 `json:"txid,omitempty"`
	// MetaFallback says one meta page is damaged and bbolt uses the other
	// one (the previous commit, or the one before the last if the newer
	// page was damaged): the file is readable.
	MetaFallback string `json:"metaFallback,omitempty"`
	// Problems lists the first damage found (at most 20); Total counts all.
	Problems []Problem `json:"problems,omitempty"`
	Total    int       `json:"total"`
	// DataIntact says that only the freelist (bbolt's list of free pages)
	// is damaged: every bucket's tree checked out, so every record can be
	// copied into a new file (Rebuild does) and nothing is lost.
	DataIntact bool `json:"dataIntact,omitempty"`
	// lossy counts the problems outside the freelist.
	lossy int
	// Elapsed is how long the check took.
	Elapsed time.Duration `json:"elapsedNs"`
}

// OK reports whether the file is sound.
func (r *Report) OK() bool { return r.Total == 0 }

// Buckets names the buckets with damage, in the order found.
func (r *Report) Buckets() []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range r.Problems {
		if p.Bucket != "" && !seen[p.Bucket] {
			seen[p.Bucket] = true
			out = append(out, p.Bucket)
		}
	}
	return out
}

// DamagedPages lists the pages named by the problems, in the order found.
func (r *Report) DamagedPages() []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for _, p := range r.Problems {
		if p.Page != 0 && !seen[p.Page] {
			seen[p.Page] = true
			out = append(out, p.Page)
		}
	}
	return out
}

func (r *Report) add(page uint64, bucket, format string, args ...any) {
	r.Total++
	if bucket != freelistName {
		r.lossy++
	}
	if len(r.Problems) < maxProblems {
		r.Problems = append(r.Problems, Problem{Page: page, Bucket: bucket, What: fmt.Sprintf(format, args...)})
	}
}

// meta is a decoded meta page.
type meta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

// decodeMeta validates the meta held in page (its header first) as bbolt
// does: magic, version, checksum.
func decodeMeta(page []byte) (meta, error) {
	if len(page) < pageHeaderSize+metaChecksumOff+8 {
		return meta{}, errors.New("shorter than a meta page")
	}
	if ne.Uint16(page[8:]) != flagMeta {
		return meta{}, fmt.Errorf("not a meta page (flags %#x)", ne.Uint16(page[8:]))
	}
	m := page[pageHeaderSize:]
	if ne.Uint32(m[0:]) != boltMagic {
		return meta{}, errors.New("no bbolt magic number")
	}
	if v := ne.Uint32(m[4:]); v != boltVersion {
		return meta{}, fmt.Errorf("format version %d, want %d", v, boltVersion)
	}
	h := fnv.New64a()
	h.Write(m[:metaChecksumOff])
	if h.Sum64() != ne.Uint64(m[metaChecksumOff:]) {
		return meta{}, errors.New("checksum mismatch")
	}
	return meta{
		pageSize: ne.Uint32(m[8:]),
		root:     ne.Uint64(m[16:]),
		freelist: ne.Uint64(m[32:]),
		pgid:     ne.Uint64(m[40:]),
		txid:     ne.Uint64(m[48:]),
	}, nil
}

// verifyFile checks the state file at path, which must exist. It never
// panics and reads at most the file. The caller holds a lock that keeps
// writers out (lockShared) or knows there is none.
func verifyFile(path string) (*Report, error) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	rep := &Report{Path: path, Size: fi.Size()}
	defer func() { rep.Elapsed = time.Since(start) }()
	v := &verifier{f: f, file: f, size: fi.Size(), rep: rep}
	if err := v.run(); err != nil {
		return nil, err
	}
	return rep, nil
}

type verifier struct {
	f    io.ReaderAt
	file *os.File // f, for readAhead; nil in tests reading something else
	size int64
	rep  *Report
	m    meta
	// seen marks the pages reached from the root and freed those the
	// freelist names.
	seen, freed []bool
	// bufs holds a page buffer per tree depth, reused: a page's keys bound
	// its children's, which are read one level deeper.
	bufs [][]byte
}

func (v *verifier) run() error {
	if v.size == 0 {
		v.rep.add(0, "", "the file is empty (zero length): truncated, a failed copy, or a first start cut off before it wrote anything")
		return nil
	}
	m, ok, err := v.metas()
	if err != nil || !ok {
		return err
	}
	v.m = m
	v.rep.PageSize, v.rep.Pages, v.rep.Txid = int(m.pageSize), m.pgid, m.txid
	if m.pgid > uint64(v.size)/uint64(m.pageSize) || m.pgid < 3 {
		need := m.pgid * uint64(m.pageSize)
		if m.pgid < 3 {
			v.rep.add(0, "", "the meta page records %d pages, fewer than a bbolt file has", m.pgid)
		} else {
			v.rep.add(0, "", "truncated: the file is %d bytes, its meta page records %d pages of %d bytes (%d bytes)",
				v.size, m.pgid, m.pageSize, need)
		}
		return nil
	}
	if used := int64(m.pgid) * int64(m.pageSize); v.file != nil && used >= readAheadFrom {
		readAhead(v.file, used) // the pages in use, not the file's preallocated tail
	}
	v.seen = make([]bool, m.pgid)
	v.freed = make([]bool, m.pgid)
	v.seen[0], v.seen[1] = true, true
	if err := v.freelist(); err != nil {
		return err
	}
	if err := v.bucket(m.root, nil, topLevel, 0); err != nil {
		return err
	}
	unreached := 0
	first := uint64(0)
	for id := uint64(2); id < m.pgid && m.freelist != noFreelist; id++ {
		// (Without a freelist page, bbolt counts every page not reached
		// as free.)
		if !v.seen[id] && !v.freed[id] {
			if unreached == 0 {
				first = id
			}
			unreached++
		}
	}
	if unreached > 0 {
		// Not lossy on its own: a damaged freelist loses the free pages
		// it lists, a damaged branch page is reported as itself.
		v.rep.add(first, "", "%d page(s) neither reachable nor free (a damaged branch or freelist page loses the pages it lists)", unreached)
		v.rep.lossy--
	}
	v.rep.DataIntact = v.rep.Total > 0 && v.rep.lossy == 0
	return nil
}

// metas reads both meta pages and picks the one bbolt uses: the valid one
// with the higher transaction ID. ok is false when neither is valid.
func (v *verifier) metas() (meta, bool, error) {
	first := make([]byte, 4096)
	n, err := v.f.ReadAt(first, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return meta{}, false, fmt.Errorf("read meta page 0: %w", err)
	}
	m0, err0 := decodeMeta(first[:n])
	// The second meta page is one page further; its size comes from the
	// first, or when that is damaged it is found as bbolt finds it.
	var m1 meta
	err1 := errors.New("not found")
	sizes := []uint32{4096, 1024, 2048, 8192, 16384, 32768, 65536}
	if err0 == nil {
		sizes = []uint32{m0.pageSize}
	}
	for _, ps := range sizes {
		buf := make([]byte, pageHeaderSize+metaChecksumOff+8)
		if n, err := v.f.ReadAt(buf, int64(ps)); err != nil && !(errors.Is(err, io.EOF) && n == len(buf)) {
			continue
		}
		if m1, err1 = decodeMeta(buf); err1 == nil {
			break
		}
	}
	switch {
	case err0 != nil && err1 != nil:
		v.rep.add(0, "", "both meta pages are damaged (page 0: %v; page 1: %v): bbolt cannot find the data (\"invalid database\")", err0, err1)
		return meta{}, false, nil
	case err0 != nil:
		v.rep.MetaFallback = fmt.Sprintf("meta page 0 is damaged (%v); bbolt uses meta page 1 (transaction %d)", err0, m1.txid)
		return m1, v.sanePageSize(m1), nil
	case err1 != nil:
		v.rep.MetaFallback = fmt.Sprintf("meta page 1 is damaged (%v); bbolt uses meta page 0 (transaction %d)", err1, m0.txid)
		return m0, v.sanePageSize(m0), nil
	case m1.txid > m0.txid:
		return m1, v.sanePageSize(m1), nil
	default:
		return m0, v.sanePageSize(m0), nil
	}
}

func (v *verifier) sanePageSize(m meta) bool {
	if m.pageSize < 512 || m.pageSize > 1<<20 || m.pageSize&(m.pageSize-1) != 0 {
		v.rep.add(0, "", "the meta page records a page size of %d bytes", m.pageSize)
		return false
	}
	return true
}

// page reads page id and its overflow pages, checking the header against
// what the caller expects. nil means the problem was reported.
func (v *verifier) page(id uint64, bucket string, want uint16, depth int) ([]byte, error) {
	ps := int64(v.m.pageSize)
	if id < 2 || id >= v.m.pgid {
		v.rep.add(id, bucket, "page ID out of range [2, %d): a damaged page refers to it", v.m.pgid)
		return nil, nil
	}
	if v.seen[id] {
		v.rep.add(id, bucket, "referred to twice")
		return nil, nil
	}
	for len(v.bufs) <= depth {
		v.bufs = append(v.bufs, make([]byte, ps))
	}
	hdr := v.bufs[depth][:ps]
	if _, err := v.f.ReadAt(hdr, int64(id)*ps); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	v.seen[id] = true
	if v.freed[id] {
		v.rep.add(id, freelistName, "in use (bucket %s) and also on the freelist", bucket)
	}
	if got := ne.Uint64(hdr); got != id {
		v.rep.add(id, bucket, "the page says it is page %d: overwritten", got)
		return nil, nil
	}
	// bbolt takes a page's type from its flags exactly (flags == leaf),
	// so does the check.
	if flags := ne.Uint16(hdr[8:]); !(flags == want || want == flagBranch|flagLeaf && (flags == flagBranch || flags == flagLeaf)) {
		v.rep.add(id, bucket, "invalid page type %#x, want %s", flags, pageKind(want))
		return nil, nil
	}
	overflow := uint64(ne.Uint32(hdr[12:]))
	if id+overflow >= v.m.pgid {
		v.rep.add(id, bucket, "%d overflow pages run past the last page", overflow)
		return nil, nil
	}
	for o := id + 1; o <= id+overflow; o++ {
		if v.seen[o] {
			v.rep.add(o, bucket, "overflow page of page %d, also used elsewhere", id)
			return nil, nil
		}
		v.seen[o] = true
	}
	if overflow == 0 {
		return hdr, nil
	}
	buf := v.bufs[depth]
	if int64(cap(buf)) < (int64(overflow)+1)*ps {
		buf = make([]byte, (int64(overflow)+1)*ps)
		copy(buf, hdr)
		v.bufs[depth] = buf
	}
	buf = buf[:(int64(overflow)+1)*ps]
	if _, err := v.f.ReadAt(buf[ps:], int64(id+1)*ps); err != nil {
		return nil, fmt.Errorf("read page %d: %w", id, err)
	}
	return buf, nil
}

func pageKind(flags uint16) string {
	switch flags {
	case flagFreelist:
		return "freelist"
	case flagBranch | flagLeaf:
		return "branch or leaf"
	}
	return fmt.Sprintf("%#x", flags)
}

func (v *verifier) freelist() error {
	if v.m.freelist == noFreelist {
		return nil
	}
	p, err := v.page(v.m.freelist, freelistName, flagFreelist, 0)
	if p == nil || err != nil {
		return err
	}
	count, at := uint64(ne.Uint16(p[10:])), uint64(pageHeaderSize)
	if count == 0xFFFF {
		count, at = ne.Uint64(p[pageHeaderSize:]), pageHeaderSize+8
	}
	if count > (uint64(len(p))-at)/8 {
		v.rep.add(v.m.freelist, freelistName, "the freelist counts %d pages, more than the page holds", count)
		return nil
	}
	for i := uint64(0); i < count; i++ {
		id := ne.Uint64(p[at+8*i:])
		switch {
		case id < 2 || id >= v.m.pgid:
			v.rep.add(v.m.freelist, freelistName, "the freelist names page %d, out of range [2, %d)", id, v.m.pgid)
			return nil
		case v.freed[id]:
			v.rep.add(v.m.freelist, freelistName, "the freelist names page %d twice", id)
		case v.seen[id]:
			v.rep.add(id, freelistName, "free and in use")
		}
		v.freed[id] = true
	}
	return nil
}

// bucket checks the tree of a bucket whose root is page root, or inline (the
// page held in the bucket's value) when root is 0.
func (v *verifier) bucket(root uint64, inline []byte, name string, depth int) error {
	if root == 0 {
		return v.leaf(0, inline, name, depth, nil, nil)
	}
	return v.node(root, name, depth, nil, nil)
}

// node checks page id and what is under it; every key must lie in [lo, hi).
func (v *verifier) node(id uint64, bucket string, depth int, lo, hi []byte) error {
	if depth > maxDepth {
		v.rep.add(id, bucket, "more than %d levels deep: a loop", maxDepth)
		return nil
	}
	p, err := v.page(id, bucket, flagBranch|flagLeaf, depth)
	if p == nil || err != nil {
		return err
	}
	if ne.Uint16(p[8:]) == flagLeaf {
		return v.leaf(id, p, bucket, depth, lo, hi)
	}
	count := int(ne.Uint16(p[10:]))
	if count == 0 {
		v.rep.add(id, bucket, "a branch page with no element")
		return nil
	}
	if pageHeaderSize+count*branchElemSize > len(p) {
		v.rep.add(id, bucket, "%d elements do not fit the page", count)
		return nil
	}
	keys := make([][]byte, count)
	kids := make([]uint64, count)
	for i := range count {
		e := pageHeaderSize + i*branchElemSize
		pos, ksize := int(ne.Uint32(p[e:])), int(ne.Uint32(p[e+4:]))
		if e+pos+ksize > len(p) || pos < 0 || ksize < 0 {
			v.rep.add(id, bucket, "key %d lies outside the page", i)
			return nil
		}
		keys[i], kids[i] = p[e+pos:e+pos+ksize], ne.Uint64(p[e+8:])
		if !v.inOrder(id, bucket, i, keys, lo, hi) {
			return nil
		}
	}
	for i, kid := range kids {
		next := hi
		if i+1 < count {
			next = keys[i+1]
		}
		if err := v.node(kid, bucket, depth+1, keys[i], next); err != nil {
			return err
		}
	}
	return nil
}

// inOrder checks key i of a page against the one before it and the bounds
// its parent sets.
func (v *verifier) inOrder(id uint64, bucket string, i int, keys [][]byte, lo, hi []byte) bool {
	k := keys[i]
	switch {
	case i > 0 && bytes.Compare(keys[i-1], k) >= 0:
		v.rep.add(id, bucket, "keys out of order at element %d", i)
	case i == 0 && lo != nil && bytes.Compare(k, lo) < 0:
		v.rep.add(id, bucket, "the first key sorts before its parent's")
	case hi != nil && bytes.Compare(k, hi) >= 0:
		v.rep.add(id, bucket, "key %d sorts after the next one of its parent", i)
	default:
		return true
	}
	return false
}

// leaf checks a leaf page (id 0: an inline bucket's page) and the buckets it
// holds.
func (v *verifier) leaf(id uint64, p []byte, bucket string, depth int, lo, hi []byte) error {
	if len(p) < pageHeaderSize {
		v.rep.add(id, bucket, "an inline bucket shorter than a page header")
		return nil
	}
	if id == 0 && ne.Uint16(p[8:]) != flagLeaf {
		v.rep.add(0, bucket, "an inline bucket that is not a leaf (flags %#x)", ne.Uint16(p[8:]))
		return nil
	}
	count := int(ne.Uint16(p[10:]))
	if pageHeaderSize+count*leafElemSize > len(p) {
		v.rep.add(id, bucket, "%d elements do not fit the page", count)
		return nil
	}
	keys := make([][]byte, count)
	type child struct {
		name  string
		value []byte
	}
	var children []child
	for i := range count {
		e := pageHeaderSize + i*leafElemSize
		flags := ne.Uint32(p[e:])
		pos, ksize, vsize := uint64(ne.Uint32(p[e+4:])), uint64(ne.Uint32(p[e+8:])), uint64(ne.Uint32(p[e+12:]))
		if uint64(e)+pos+ksize+vsize > uint64(len(p)) {
			v.rep.add(id, bucket, "element %d lies outside the page", i)
			return nil
		}
		start := uint64(e) + pos
		keys[i] = p[start : start+ksize]
		if !v.inOrder(id, bucket, i, keys, lo, hi) {
			return nil
		}
		if flags&flagBucket != 0 {
			if id == 0 {
				// bbolt keeps a bucket inline only while it has no
				// bucket inside, and panics reading one that does.
				v.rep.add(0, bucket, "an inline bucket holding a bucket (%q)", keys[i])
				return nil
			}
			children = append(children, child{string(keys[i]), p[start+ksize : start+ksize+vsize]})
		}
	}
	for _, c := range children {
		name := c.name
		if bucket != topLevel {
			name = bucket + "/" + c.name
		}
		if len(c.value) < inBucketSize {
			v.rep.add(id, name, "the bucket's header is %d bytes", len(c.value))
			continue
		}
		root := ne.Uint64(c.value)
		if err := v.bucket(root, c.value[inBucketSize:], name, depth+1); err != nil {
			return err
		}
	}
	return nil
}
