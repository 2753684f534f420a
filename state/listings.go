package state

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketListings holds the child collections a run read before deleting
// their parents (the unmanaged-children check), so that a run that stops
// before its deletions are done does not read them again. The bucket is
// created by the first PutListing; a file without it has no listings.
var bucketListings = []byte("listings")

// Listing is one child collection as ARM listed it for a revision's
// deletions.
type Listing struct {
	// Revision is the revision whose plan asked for the listing: a listing
	// serves only that revision.
	Revision string `json:"revision"`
	// Credential is the credential the collection was read with.
	Credential string `json:"credential,omitempty"`
	// Path is the collection's ARM path, APIVersion the version it was
	// listed at.
	Path       string    `json:"path"`
	APIVersion string    `json:"apiVersion"`
	ListedAt   time.Time `json:"listedAt"`
	// IDs are the ARM IDs the collection held (none when it did not exist).
	IDs []string `json:"ids,omitempty"`
}

// ListingKey returns the key a listing is stored and looked up under:
// revision, credential, lower-cased path and API version.
func ListingKey(revision, credential, path, apiVersion string) string {
	return revision + "\n" + strings.ToLower(credential) + "\n" + strings.ToLower(path) + "?api-version=" + apiVersion
}

// Key is the listing's ListingKey.
func (l Listing) Key() string { return ListingKey(l.Revision, l.Credential, l.Path, l.APIVersion) }

// PutListing records a listing, replacing one under the same key.
func (w *Writer) PutListing(l Listing) error {
	if l.Revision == "" || l.Path == "" {
		return fmt.Errorf("state: put listing %q: revision and path are required", l.Path)
	}
	b, err := w.tx.CreateBucketIfNotExists(bucketListings)
	if err != nil {
		return fmt.Errorf("state: put listing %s: %w", l.Path, err)
	}
	v, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("state: put listing %s: %w", l.Path, err)
	}
	if err := b.Put([]byte(l.Key()), v); err != nil {
		return fmt.Errorf("state: put listing %s: %w", l.Path, err)
	}
	return nil
}

// DeleteListings forgets the listings of every revision but keep, and those
// of keep listed before notBefore. It returns how many it forgot.
func (w *Writer) DeleteListings(keep string, notBefore time.Time) (int, error) {
	b := w.tx.Bucket(bucketListings)
	if b == nil {
		return 0, nil
	}
	prefix := []byte(keep + "\n")
	var drop [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if keep != "" && bytes.HasPrefix(k, prefix) {
			var l Listing
			if json.Unmarshal(v, &l) == nil && !l.ListedAt.Before(notBefore) {
				return nil
			}
		}
		drop = append(drop, bytes.Clone(k))
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("state: delete listings: %w", err)
	}
	for _, k := range drop {
		if err := b.Delete(k); err != nil {
			return 0, fmt.Errorf("state: delete listings: %w", err)
		}
	}
	return len(drop), nil
}

// Listings returns the listings recorded for revision, by Key, and how many
// listings of other revisions (or older ones of this revision) the file
// holds besides: stale, which DeleteListings forgets. A listing of revision
// older than notBefore is stale.
func (db *DB) Listings(revision string, notBefore time.Time) (map[string]Listing, int, error) {
	out := map[string]Listing{}
	stale := 0
	prefix := []byte(revision + "\n")
	err := db.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketListings)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if !bytes.HasPrefix(k, prefix) {
				stale++
				return nil
			}
			var l Listing
			if err := json.Unmarshal(v, &l); err != nil {
				return fmt.Errorf("decode listing %q: %w", k, err)
			}
			if l.ListedAt.Before(notBefore) {
				stale++
				return nil
			}
			out[string(k)] = l
			return nil
		})
	})
	if err != nil {
		return nil, 0, fmt.Errorf("state: read listings: %w", err)
	}
	return out, stale, nil
}
