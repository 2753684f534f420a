package state

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

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

func readyOf(v []byte) (string, error) {
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
			k, v = c.Seek(u64(before))
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

// Nodes returns every resource as a graph node, sorted by key. It decodes
// only the fields a node has.
func (db *DB) Nodes() ([]Node, error) {
	var out []Node
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketResources)
		out = make([]Node, 0, b.Stats().KeyN)
		return b.ForEach(func(k, v []byte) error {
			var r struct {
				ARMID string `json:"armId"`
				Ready struct {
					Status string `json:"status"`
					Reason string `json:"reason"`
				} `json:"ready"`
				DependsOn []string `json:"dependsOn"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode resource %s: %w", k, err)
			}
			out = append(out, Node{Key: string(k), ARMID: r.ARMID, Reason: r.Ready.Reason, DependsOn: r.DependsOn,
				Ready: record.Resource{Ready: record.Condition{Status: r.Ready.Status}}.ReadyStatus()})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: read graph: %w", err)
	}
	return out, nil
}

// Facets returns the namespaces and the kinds ("group/Kind") of the stored
// resources, sorted, from their keys alone.
func (db *DB) Facets() (namespaces, kinds []string, err error) {
	ns, ks := map[string]bool{}, map[string]bool{}
	err = db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketResources).ForEach(func(k, _ []byte) error {
			n, g, kind, _, ok := record.SplitKey(string(k))
			if ok {
				ns[n], ks[g+"/"+kind] = true, true
			}
			return nil
		})
	})
	if err != nil {
		return nil, nil, fmt.Errorf("state: read facets: %w", err)
	}
	for n := range ns {
		namespaces = append(namespaces, n)
	}
	for k := range ks {
		kinds = append(kinds, k)
	}
	sort.Strings(namespaces)
	sort.Strings(kinds)
	return namespaces, kinds, nil
}
