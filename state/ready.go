package state

import (
	"encoding/json"
	"fmt"
	"hash/maphash"
	"sync"

	bolt "go.etcd.io/bbolt"

	"github.com/gitaso/gitaso/record"
)

// readyIndex keeps each resource's Ready status in memory, so that
// ReadyCounts (read by every /metrics scrape) costs the same at 10,000
// resources as at 10. It is filled by one scan of the resources on the first
// ReadyCounts and then kept as records change: PutResource and
// DeleteResource note the new status, applied when their transaction
// commits. Each entry remembers the transaction that wrote it, so that
// commit handlers running out of order, or a commit racing the first scan,
// never leave an older status in place of a newer one.
type readyIndex struct {
	mu     sync.Mutex
	seeded bool
	// keys are hashes of the resource keys (readyKey): an index of 100,000
	// resources held 10 MB of key strings. Two keys of one hash (odds about
	// 3e-10 at 100,000) would share an entry and count as one.
	keys   map[uint64]readyEntry
	counts map[string]int
}

type readyEntry struct {
	status string // "" once deleted
	txid   int
}

// noteReady records, for when the transaction commits, that key now has
// Ready status (ReadyStatus: True, False or Unknown), or is gone ("").
func (w *Writer) noteReady(key, status string) {
	db, txid := w.db, w.tx.ID()
	w.tx.OnCommit(func() { db.ready.set(key, status, txid) })
}

func (ix *readyIndex) set(key, status string, txid int) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.seeded {
		return // the first scan, still to come, reads the committed record
	}
	h := readyKey(key)
	old, ok := ix.keys[h]
	if ok && old.txid >= txid {
		return
	}
	if ok && old.status != "" {
		ix.counts[old.status]--
	}
	if status != "" {
		ix.counts[status]++
	}
	ix.keys[h] = readyEntry{status: status, txid: txid}
}

func readyKey(key string) uint64 { return maphash.String(digestSeed, key) }

// seed scans the stored resources once; ix.mu is held.
func (ix *readyIndex) seed(db *DB) error {
	keys := map[uint64]readyEntry{}
	counts := map[string]int{}
	err := db.view(func(tx *bolt.Tx) error {
		txid := tx.ID()
		return tx.Bucket(bucketResources).ForEach(func(k, v []byte) error {
			var r struct {
				Ready struct {
					Status string `json:"status"`
				} `json:"ready"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode resource %s: %w", k, err)
			}
			st := record.Resource{Ready: record.Condition{Status: r.Ready.Status}}.ReadyStatus()
			keys[maphash.Bytes(digestSeed, k)] = readyEntry{status: st, txid: txid}
			counts[st]++
			return nil
		})
	})
	if err != nil {
		return err
	}
	ix.keys, ix.counts, ix.seeded = keys, counts, true
	return nil
}

// ReadyCounts returns how many resources have each Ready status (True, False,
// Unknown), for metrics. The first call reads every resource; later calls
// read the counts kept in memory as resources are written and deleted.
func (db *DB) ReadyCounts() (map[string]int, error) {
	ix := &db.ready
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if !ix.seeded {
		if err := ix.seed(db); err != nil {
			return nil, fmt.Errorf("state: count resources: %w", err)
		}
	}
	counts := map[string]int{record.StatusTrue: 0, record.StatusFalse: 0, record.StatusUnknown: 0}
	for st, n := range ix.counts {
		counts[st] += n
	}
	return counts, nil
}
