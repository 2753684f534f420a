package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// Page is a query for one page of resources: those matching Filter whose
// key sorts after After (the last key of the previous page; "" starts at the
// first), at most Limit of them. Name, when set, keeps the resources whose
// name contains it, case-insensitively.
type Page struct {
	Filter record.Filter
	Name   string
	After  string
	Limit  int
}

// ResourcePage returns one page of resources sorted by key, and whether more
// match after it. The page is read in one transaction and decoded before it
// ends. Across pages (each its own transaction) every resource stored during
// the whole listing is returned exactly once, whatever is written between
// pages: keys are visited in order and each page starts after the last key
// served; a resource added or removed meanwhile may or may not appear.
func (db *DB) ResourcePage(q Page) ([]record.Resource, bool, error) {
	ready, err := record.ParseReady(q.Filter.Ready)
	if err != nil {
		return nil, false, err
	}
	if q.Limit <= 0 {
		return nil, false, fmt.Errorf("state: list resources: limit %d must be positive", q.Limit)
	}
	name := strings.ToLower(q.Name)
	var (
		out  []record.Resource
		more bool
	)
	err = db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketResources).Cursor()
		var prefix []byte
		if q.Filter.Namespace != "" {
			prefix = []byte(q.Filter.Namespace + "/")
		}
		var k, v []byte
		switch {
		case q.After != "" && q.After >= string(prefix):
			k, v = c.Seek([]byte(q.After))
			if k != nil && string(k) == q.After {
				k, v = c.Next()
			}
		default:
			k, v = c.Seek(prefix)
		}
		var keys, vals [][]byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			_, group, kind, rname, ok := record.SplitKey(string(k))
			if !ok || !q.Filter.MatchKey(group, kind) {
				continue
			}
			if name != "" && !strings.Contains(strings.ToLower(rname), name) {
				continue
			}
			if ready != "" {
				st, err := readyOf(v)
				if err != nil {
					return fmt.Errorf("decode resource %s: %w", k, err)
				}
				if st != ready {
					continue
				}
			}
			if len(vals) == q.Limit {
				more = true
				break
			}
			keys, vals = append(keys, k), append(vals, v)
		}
		out, err = decodeResources(keys, vals)
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("state: list resources: %w", err)
	}
	return out, more, nil
}

// readyOf returns the Ready status of a stored resource record. Records are
// written by json.Marshal of record.Resource, whose fields after "ready"
// hold only strings (where a quote is escaped), so the last `"ready":{`
// is the record's own condition and its "type" and "status" come first:
// read there without decoding the whole record (the applied body makes up
// most of it). Anything else is decoded.
func readyOf(v []byte) (string, error) {
	if i := bytes.LastIndex(v, readyField); i >= 0 {
		rest := v[i+len(readyField):]
		if rest, ok := bytes.CutPrefix(rest, readyType); ok {
			if j := bytes.IndexByte(rest, '"'); j >= 0 {
				switch string(rest[:j]) {
				case record.StatusTrue, record.StatusFalse:
					return string(rest[:j]), nil
				}
				return record.StatusUnknown, nil
			}
		}
	}
	return readyDecoded(v)
}

var (
	readyField = []byte(`"ready":{`)
	readyType  = []byte(`"type":"Ready","status":"`)
)

func readyDecoded(v []byte) (string, error) {
	var r struct {
		Ready struct {
			Status string `json:"status"`
		} `json:"ready"`
	}
	if err := json.Unmarshal(v, &r); err != nil {
		return "", err
	}
	return record.Resource{Ready: record.Condition{Status: r.Ready.Status}}.ReadyStatus(), nil
}

// RunPage returns up to limit runs older than before (all when before is
// 0), newest first, and whether older runs remain.
func (db *DB) RunPage(before uint64, limit int) ([]record.Run, bool, error) {
	var (
		out  []record.Run
		more bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketRuns).Cursor()
		var k, v []byte
		if before == 0 {
			k, v = c.Last()
		} else {
			k, _ = c.Seek(u64(before))
			if k == nil {
				k, v = c.Last()
			} else {
				k, v = c.Prev()
			}
		}
		for ; k != nil; k, v = c.Prev() {
			if limit > 0 && len(out) == limit {
				more = true
				break
			}
			var r record.Run
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode run %d: %w", binary.BigEndian.Uint64(k), err)
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("state: list runs: %w", err)
	}
	return out, more, nil
}

// Node is a resource as the dependency graph shows it.
type Node struct {
	Key   string
	ARMID string
	// Ready is True, False or Unknown; Reason is the Ready condition's.
	Ready, Reason string
	DependsOn     []string
}

// CommitID returns the ID of the last committed write transaction. It
// changes with every Update that commits, so what a reader derived from the
// state under one ID (e.g. Nodes) stays valid while CommitID returns it.
func (db *DB) CommitID() (uint64, error) {
	var id uint64
	err := db.view(func(tx *bolt.Tx) error {
		id = uint64(tx.ID())
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("state: read commit id: %w", err)
	}
	return id, nil
}

// Nodes returns every resource as a graph node, sorted by key, and the
// CommitID they were read at. It decodes only the fields a node has, in
// parallel.
func (db *DB) Nodes() ([]Node, uint64, error) {
	var (
		out []Node
		id  uint64
	)
	err := db.view(func(tx *bolt.Tx) error {
		id = uint64(tx.ID())
		var keys, vals [][]byte
		if err := tx.Bucket(bucketResources).ForEach(func(k, v []byte) error {
			keys, vals = append(keys, k), append(vals, v)
			return nil
		}); err != nil {
			return err
		}
		out = make([]Node, len(vals))
		workers := min(runtime.GOMAXPROCS(0), len(vals)/256+1)
		chunk := (len(vals) + workers - 1) / workers
		errs := make([]error, workers)
		var wg sync.WaitGroup
		for w := range workers {
			lo, hi := w*chunk, min((w+1)*chunk, len(vals))
			wg.Go(func() {
				for i := lo; i < hi; i++ {
					var r struct {
						ARMID string `json:"armId"`
						Ready struct {
							Status string `json:"status"`
							Reason string `json:"reason"`
						} `json:"ready"`
						DependsOn []string `json:"dependsOn"`
					}
					if err := json.Unmarshal(vals[i], &r); err != nil {
						errs[w] = fmt.Errorf("decode resource %s: %w", keys[i], err)
						return
					}
					out[i] = Node{Key: string(keys[i]), ARMID: r.ARMID, Reason: r.Ready.Reason, DependsOn: r.DependsOn,
						Ready: record.Resource{Ready: record.Condition{Status: r.Ready.Status}}.ReadyStatus()}
				}
			})
		}
		wg.Wait()
		return errors.Join(errs...)
	})
	if err != nil {
		return nil, 0, fmt.Errorf("state: read graph: %w", err)
	}
	return out, id, nil
}

// Facets returns how many resources have each Ready status (True, False,
// Unknown), and the namespaces and kinds ("group/Kind") there are, sorted;
// in one pass that does not decode the records.
func (db *DB) Facets() (ready map[string]int, namespaces, kinds []string, err error) {
	ns, ks := map[string]bool{}, map[string]bool{}
	ready = map[string]int{record.StatusTrue: 0, record.StatusFalse: 0, record.StatusUnknown: 0}
	err = db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketResources).ForEach(func(k, v []byte) error {
			n, g, kind, _, ok := record.SplitKey(string(k))
			if ok {
				ns[n], ks[g+"/"+kind] = true, true
			}
			st, err := readyOf(v)
			if err != nil {
				return fmt.Errorf("decode resource %s: %w", k, err)
			}
			ready[st]++
			return nil
		})
	})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state: read facets: %w", err)
	}
	for n := range ns {
		namespaces = append(namespaces, n)
	}
	for k := range ks {
		kinds = append(kinds, k)
	}
	sort.Strings(namespaces)
	sort.Strings(kinds)
	return ready, namespaces, kinds, nil
}
