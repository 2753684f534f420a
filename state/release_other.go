//go:build !linux

package state

import bolt "go.etcd.io/bbolt"

// ReleasePages does nothing outside Linux.
func (db *DB) ReleasePages() error { return nil }

func (db *DB) releasePages(*bolt.Tx) error { return nil }
