package api

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// The resource index keeps every resource with what the filters read
// (namespace, group, kind, name, Ready status), sorted by key: a page is a
// binary search, and a summary a count, with no transaction at all. It is
// rebuilt when state.ResourcesVersion changes (a resource was written or
// deleted; a run record or an operation does not count), from
// state.WalkResources: a record whose digest did not change keeps its
// entry, so a run that writes ten resources decodes ten. An entry's item
// (the resource as GET /api/v1/resources shows it) is encoded when a page
// first shows it and kept with the entry until the record changes; a long
// list is encoded a chunk at a time as it is written, and not kept.
// Encoding every
// resource on every rebuild held 90 MB at 100,000 resources for answers
// nobody asked for (a summary polled during a run). The graph, the summary
// and the kept pages are derived from it and keyed by its version, which
// changes only when an entry does.

// entry is one resource of the index.
type entry struct {
	key    string
	digest uint64
	// group, kind and name are those of the key; lname is name in lower
	// case (the name filter is case-insensitive).
	ns, group, kind, lname string
	ready                  string // True, False or Unknown
	// unit is the ID of the Flux unit that rendered the resource, "" for
	// none (GET /api/v1/units/{kind}/{namespace}/{name} lists them).
	unit      string
	dependsOn []string
	// item is the json of view(r, false) once a kept page showed it.
	item atomic.Pointer[[]byte]
}

// snapshot is the index at one state.ResourcesVersion.
type snapshot struct {
	// at is the state.ResourcesVersion read before the walk.
	at uint64
	// version changes when an entry does (a resource added, changed or
	// removed) and only then.
	version uint64
	entries []*entry
}

type resourceIndex struct {
	cur      atomic.Pointer[snapshot]
	mu       sync.Mutex // one rebuild at a time
	versions atomic.Uint64
}

// current returns the index as the state is now, rebuilding it when a
// resource changed since the last one.
func (ix *resourceIndex) current(db *state.DB) (*snapshot, error) {
	at := db.ResourcesVersion()
	if s := ix.cur.Load(); s != nil && s.at == at {
		return s, nil
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	at = db.ResourcesVersion()
	prev := ix.cur.Load()
	if prev != nil && prev.at == at {
		return prev, nil // rebuilt while this request waited
	}
	s, err := rebuild(db, prev, at, &ix.versions)
	if err != nil {
		return nil, err
	}
	ix.cur.Store(s)
	return s, nil
}

// rebuild walks the state and reuses the entries of prev whose record did
// not change.
func rebuild(db *state.DB, prev *snapshot, at uint64, versions *atomic.Uint64) (*snapshot, error) {
	var old []*entry
	if prev != nil {
		old = prev.entries
	}
	entries := make([]*entry, 0, len(old))
	var fresh []int // entries made by this walk
	changed := false
	j := 0
	_, err := db.WalkResources(func(k []byte, digest uint64, decode func() (record.Resource, error)) error {
		for j < len(old) && old[j].key < string(k) {
			j++ // removed
			changed = true
		}
		if j < len(old) && old[j].key == string(k) && old[j].digest == digest {
			entries = append(entries, old[j])
			j++
			return nil
		}
		changed = true
		r, err := decode()
		if err != nil {
			return err
		}
		key := string(k)
		if j < len(old) && old[j].key == key {
			key = old[j].key // changed: the new entry keeps the old key's string
		}
		fresh = append(fresh, len(entries))
		entries = append(entries, newEntry(key, digest, r))
		return nil
	})
	if err != nil {
		return nil, err
	}
	if j < len(old) {
		changed = true
	}
	// A dependency is another entry's key: share its string rather than
	// keep the decoded copy (a string per edge). The resources of a unit
	// share one string of its ID.
	units := map[string]string{}
	for _, i := range fresh {
		if u := entries[i].unit; u != "" {
			if s, ok := units[u]; ok {
				entries[i].unit = s
			} else {
				units[u] = u
			}
		}
		for d, dep := range entries[i].dependsOn {
			if at, ok := slices.BinarySearchFunc(entries, dep, func(e *entry, k string) int { return strings.Compare(e.key, k) }); ok {
				entries[i].dependsOn[d] = entries[at].key
			}
		}
	}
	s := &snapshot{at: at, entries: entries}
	switch {
	case prev == nil || changed:
		s.version = versions.Add(1)
	default:
		s.version = prev.version
		s.entries = prev.entries // the same entries: keep one copy
	}
	return s, nil
}

func newEntry(key string, digest uint64, r record.Resource) *entry {
	e := &entry{key: key, digest: digest, ready: r.ReadyStatus(), unit: r.Unit, dependsOn: slices.Clip(r.DependsOn)}
	if ns, group, kind, name, ok := record.SplitKey(key); ok {
		e.ns, e.group, e.kind, e.lname = ns, group, kind, strings.ToLower(name)
	}
	return e
}

// encodeChunk is how many items encodeItems reads in one transaction.
const encodeChunk = 512

// encodeItems returns the encoded items of es, in order: kept encodings as
// they are, the others read from db and encoded (nil for a resource deleted
// since the snapshot). keep keeps the new encodings in their entries when
// the record is still the one the entry was built from: a page's are kept,
// a long list's are not (80 MB at 100,000 resources, for good, for a
// client that asked once).
func encodeItems(db *state.DB, es []*entry, keep bool) ([][]byte, error) {
	out := make([][]byte, len(es))
	var keys []string
	var at []int
	for i, e := range es {
		if p := e.item.Load(); p != nil {
			out[i] = *p
			continue
		}
		keys, at = append(keys, e.key), append(at, i)
	}
	if len(keys) == 0 {
		return out, nil
	}
	err := db.ResourcesByKey(keys, func(j int, ok bool, digest uint64, decode func(any) error) error {
		if !ok {
			return nil
		}
		var r listedRecord
		if err := decode(&r); err != nil {
			return err
		}
		b, err := json.Marshal(view(r.Resource, false))
		if err != nil {
			return fmt.Errorf("encode resource %s: %w", keys[j], err)
		}
		e := es[at[j]]
		out[at[j]] = b
		if keep && digest == e.digest {
			e.item.Store(&b)
		}
		return nil
	})
	return out, err
}

// listedRecord is a stored record as a list shows it (view without the
// body): its applied body and dependencies, the largest fields, are
// skipped rather than copied.
type listedRecord struct {
	record.Resource
	AppliedBody skipJSON `json:"appliedBody,omitempty"`
	DependsOn   skipJSON `json:"dependsOn,omitempty"`
}

// skipJSON decodes nothing.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// pageQuery is a query of GET /api/v1/resources, normalised: the same
// query always selects the same resources of a snapshot.
type pageQuery struct {
	ns, kind, ready, lname string // kind as given (matched case-insensitively)
	after                  string
	limit                  int // 0: every match
	// allow, when set, says which namespaces the caller may read.
	allow func(ns string) bool
}

// page returns the entries of q, and whether more match after them.
func (s *snapshot) page(q pageQuery) ([]*entry, bool) {
	es := s.entries
	prefix := ""
	if q.ns != "" {
		prefix = q.ns + "/"
	}
	var i int
	if q.after != "" && q.after >= prefix {
		i = sort.Search(len(es), func(i int) bool { return es[i].key > q.after })
	} else {
		i = sort.Search(len(es), func(i int) bool { return es[i].key >= prefix })
	}
	f := record.Filter{Kind: q.kind}
	var out []*entry
	if q.limit > 0 {
		out = make([]*entry, 0, min(q.limit, len(es)-i))
	}
	for ; i < len(es); i++ {
		e := es[i]
		if !strings.HasPrefix(e.key, prefix) {
			break
		}
		if e.kind == "" || !f.MatchKey(e.group, e.kind) {
			continue
		}
		if q.lname != "" && !strings.Contains(e.lname, q.lname) {
			continue
		}
		if q.allow != nil && !q.allow(e.ns) {
			continue
		}
		if q.ready != "" && e.ready != q.ready {
			continue
		}
		if q.limit > 0 && len(out) == q.limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

// scoped returns the snapshot cut to the namespaces of scope sc (itself
// for every namespace): the entries are shared, the version kept.
func (s *snapshot) scoped(sc access.Scope) *snapshot {
	if sc.All() {
		return s
	}
	out := &snapshot{at: s.at, version: s.version, entries: make([]*entry, 0, len(s.entries))}
	for _, e := range s.entries {
		if sc.Allows(e.ns) {
			out.entries = append(out.entries, e)
		}
	}
	return out
}

// nodes returns the snapshot as graph nodes, with their ARM IDs read from
// db: the index does not hold them (17 MB at 100,000 resources) for an
// answer kept once made. A resource deleted since the snapshot has none.
func (s *snapshot) nodes(db *state.DB) ([]state.Node, error) {
	out := make([]state.Node, len(s.entries))
	keys := make([]string, len(s.entries))
	for i, e := range s.entries {
		out[i] = state.Node{Key: e.key, Ready: e.ready, DependsOn: e.dependsOn}
		keys[i] = e.key
	}
	err := db.ResourcesByKey(keys, func(i int, ok bool, _ uint64, decode func(any) error) error {
		if !ok {
			return nil
		}
		var r struct {
			ARMID string `json:"armId"`
		}
		if err := decode(&r); err != nil {
			return err
		}
		out[i].ARMID = r.ARMID
		return nil
	})
	return out, err
}

// summary counts the snapshot's resources by Ready status and lists its
// namespaces and kinds.
func (s *snapshot) summary() Summary {
	out := Summary{Total: len(s.entries), Ready: map[string]int{record.StatusTrue: 0, record.StatusFalse: 0, record.StatusUnknown: 0},
		Namespaces: []string{}, Kinds: []string{}}
	// Counted without a string per entry: a summary polled every second
	// during a run of 100,000 resources allocated 1.6 GB in 8 minutes.
	type groupKind struct{ group, kind string }
	ns, kinds := map[string]bool{}, map[groupKind]bool{}
	for _, e := range s.entries {
		out.Ready[e.ready]++
		if e.kind != "" {
			ns[e.ns], kinds[groupKind{e.group, e.kind}] = true, true
		}
	}
	for n := range ns {
		out.Namespaces = append(out.Namespaces, n)
	}
	for k := range kinds {
		out.Kinds = append(out.Kinds, k.group+"/"+k.kind)
	}
	sort.Strings(out.Namespaces)
	sort.Strings(out.Kinds)
	return out
}

// namespaces lists the namespaces of the resources the state holds, sorted
// (none when the index cannot be read).
func (s *server) namespaces() []string {
	snap, err := s.index.current(s.db)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range snap.entries {
		if !seen[e.ns] {
			seen[e.ns] = true
			out = append(out, e.ns)
		}
	}
	sort.Strings(out)
	return out
}
