package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Resource is what gitaso remembers about one ASO resource between runs.
type Resource struct {
	Namespace  string `json:"namespace"`
	Group      string `json:"group"`
	Version    string `json:"version,omitempty"`
	Kind       string `json:"kind"`
	Name       string `json:"name"`
	ARMID      string `json:"armId,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	File       string `json:"file,omitempty"`
	// Credential names the credential that applied it (its source name only).
	Credential string `json:"credential,omitempty"`
	// AppliedHash is the sha256 of the last applied body (after resolution,
	// secrets included); never shown by the API.
	AppliedHash string `json:"appliedHash,omitempty"`
	// AppliedBody is the last applied body with secret values redacted.
	AppliedBody json.RawMessage `json:"appliedBody,omitempty"`
	// DesiredHash is the hash of the body the manifest asked for at the last
	// run (applied or not); Generation increments when it changes.
	DesiredHash string `json:"desiredHash,omitempty"`
	// Generation increments when the desired body changes.
	Generation int64     `json:"generation,omitempty"`
	Ready      Condition `json:"ready"`
	// Outputs are exported non-secret values, "configmap/key" → value.
	Outputs map[string]string `json:"outputs,omitempty"`
	// SecretOutputs names exported secret values, "secret/key"; the values
	// live encrypted in the secret exports (see PutSecretExports).
	SecretOutputs []string  `json:"secretOutputs,omitempty"`
	Revision      string    `json:"revision,omitempty"`
	UpdatedAt     time.Time `json:"updatedAt"`
	// Policy is the reconcile policy: manage | skip | detach-on-delete.
	Policy string `json:"policy,omitempty"`
	// DeleteUnmanaged records the manifest's opt-in (annotation
	// gitaso.io/delete-unmanaged-children) to be deleted even when ARM's
	// cascade takes resources gitaso does not manage with it.
	DeleteUnmanaged bool `json:"deleteUnmanaged,omitempty"`
}

// Key returns the resource's state key, "namespace/group/Kind/name".
func (r Resource) Key() string { return ResourceKey(r.Namespace, r.Group, r.Kind, r.Name) }

// ResourceKey builds the state key "namespace/group/Kind/name".
func ResourceKey(namespace, group, kind, name string) string {
	return namespace + "/" + group + "/" + kind + "/" + name
}

// SplitKey splits a resource key into namespace, group, Kind and name.
func SplitKey(key string) (namespace, group, kind, name string, ok bool) {
	parts := strings.SplitN(key, "/", 4)
	if len(parts) != 4 {
		return "", "", "", "", false
	}
	return parts[0], parts[1], parts[2], parts[3], true
}

// Filter selects resources. Empty fields match everything.
type Filter struct {
	Namespace string
	// Kind matches "Kind" or "group/Kind", case-insensitively.
	Kind string
	// Ready matches the Ready condition status: "True", "False" or "Unknown"
	// (case-insensitive); a resource without a Ready condition is Unknown.
	Ready string
}

// ReadyStatus returns the resource's Ready status, Unknown when it has none.
func (r Resource) ReadyStatus() string {
	switch r.Ready.Status {
	case StatusTrue, StatusFalse:
		return r.Ready.Status
	}
	return StatusUnknown
}

// ParseReady normalises a readiness filter value ("true", "FALSE", ...) to
// StatusTrue, StatusFalse or StatusUnknown; "" stays "".
func ParseReady(s string) (string, error) {
	switch strings.ToLower(s) {
	case "":
		return "", nil
	case "true":
		return StatusTrue, nil
	case "false":
		return StatusFalse, nil
	case "unknown":
		return StatusUnknown, nil
	}
	return "", fmt.Errorf("state: invalid readiness %q: want true, false or unknown", s)
}

func (f Filter) matchKey(group, kind string) bool {
	if f.Kind == "" {
		return true
	}
	if g, k, ok := strings.Cut(f.Kind, "/"); ok {
		return strings.EqualFold(g, group) && strings.EqualFold(k, kind)
	}
	return strings.EqualFold(f.Kind, kind)
}

// PutResource stores r under r.Key(), replacing what was there. A zero
// UpdatedAt is set to the current time.
func (w *Writer) PutResource(r Resource) error {
	if r.Namespace == "" || r.Kind == "" || r.Name == "" {
		return fmt.Errorf("state: put resource %q: namespace, kind and name are required", r.Key())
	}
	if strings.Contains(r.Namespace, "/") || strings.Contains(r.Group, "/") || strings.Contains(r.Kind, "/") {
		return fmt.Errorf("state: put resource %q: namespace, group and kind must not contain '/'", r.Key())
	}
	if r.UpdatedAt.IsZero() {
		r.UpdatedAt = time.Now().UTC()
	}
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("state: put resource %s: %w", r.Key(), err)
	}
	if err := w.tx.Bucket(bucketResources).Put([]byte(r.Key()), b); err != nil {
		return fmt.Errorf("state: put resource %s: %w", r.Key(), err)
	}
	return nil
}

// DeleteResource removes the resource with key; a missing key is not an error.
func (w *Writer) DeleteResource(key string) error {
	if err := w.tx.Bucket(bucketResources).Delete([]byte(key)); err != nil {
		return fmt.Errorf("state: delete resource %s: %w", key, err)
	}
	return nil
}

// Resource reads a resource inside the write transaction (seeing this
// transaction's own writes).
func (w *Writer) Resource(key string) (Resource, bool, error) {
	return getResource(w.tx, key)
}

// SetReady merges cond into the stored resource's Ready condition with
// MergeCondition (ASO's overwrite rules) and reports whether it changed. It
// fails when the resource is not stored.
func (w *Writer) SetReady(key string, cond Condition, now time.Time) (bool, error) {
	r, ok, err := getResource(w.tx, key)
	if err != nil {
		return false, err
	}
	if !ok {
		return false, fmt.Errorf("state: set ready on %s: resource not found", key)
	}
	if cond.Type == "" {
		cond.Type = ConditionReady
	}
	merged, changed := MergeCondition(r.Ready, cond, now)
	if !changed {
		return false, nil
	}
	r.Ready = merged
	r.UpdatedAt = now.UTC()
	return true, w.PutResource(r)
}

// Resource returns the resource stored under key ("namespace/group/Kind/name").
func (db *DB) Resource(key string) (Resource, bool, error) {
	var (
		r  Resource
		ok bool
	)
	err := db.view(func(tx *bolt.Tx) error {
		var err error
		r, ok, err = getResource(tx, key)
		return err
	})
	return r, ok, err
}

func getResource(tx *bolt.Tx, key string) (Resource, bool, error) {
	v := tx.Bucket(bucketResources).Get([]byte(key))
	if v == nil {
		return Resource{}, false, nil
	}
	var r Resource
	if err := json.Unmarshal(v, &r); err != nil {
		return Resource{}, false, fmt.Errorf("state: decode resource %s: %w", key, err)
	}
	return r, true, nil
}

// Resources returns the resources matching f, sorted by key (namespace, group,
// Kind, name).
func (db *DB) Resources(f Filter) ([]Resource, error) {
	ready, err := ParseReady(f.Ready)
	if err != nil {
		return nil, err
	}
	var out []Resource
	err = db.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketResources).Cursor()
		var k, v []byte
		var prefix []byte
		if f.Namespace != "" {
			prefix = []byte(f.Namespace + "/")
			k, v = c.Seek(prefix)
		} else {
			k, v = c.First()
		}
		// Values point into the mmap and stay valid until the transaction
		// ends; they are decoded (which copies) before it does.
		var keys, vals [][]byte
		for ; k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			_, group, kind, _, ok := SplitKey(string(k))
			if !ok || !f.matchKey(group, kind) {
				continue
			}
			keys, vals = append(keys, k), append(vals, v)
		}
		all, err := decodeResources(keys, vals)
		if err != nil {
			return err
		}
		if ready == "" {
			out = all
			return nil
		}
		for _, r := range all {
			if r.ReadyStatus() == ready {
				out = append(out, r)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("state: list resources: %w", err)
	}
	return out, nil
}

// decodeResources decodes vals in parallel (JSON decoding dominates a full
// read), each goroutine writing its own slots.
func decodeResources(keys, vals [][]byte) ([]Resource, error) {
	out := make([]Resource, len(vals))
	workers := min(runtime.GOMAXPROCS(0), len(vals)/256+1)
	chunk := (len(vals) + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*chunk, min((w+1)*chunk, len(vals))
		wg.Go(func() {
			for i := lo; i < hi; i++ {
				if err := json.Unmarshal(vals[i], &out[i]); err != nil {
					errs[w] = fmt.Errorf("decode resource %s: %w", keys[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// ReadyCounts returns how many resources have each Ready status (True, False,
// Unknown), for metrics.
func (db *DB) ReadyCounts() (map[string]int, error) {
	counts := map[string]int{StatusTrue: 0, StatusFalse: 0, StatusUnknown: 0}
	err := db.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketResources).ForEach(func(k, v []byte) error {
			var r struct {
				Ready struct {
					Status string `json:"status"`
				} `json:"ready"`
			}
			if err := json.Unmarshal(v, &r); err != nil {
				return fmt.Errorf("decode resource %s: %w", k, err)
			}
			counts[Resource{Ready: Condition{Status: r.Ready.Status}}.ReadyStatus()]++
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("state: count resources: %w", err)
	}
	return counts, nil
}
