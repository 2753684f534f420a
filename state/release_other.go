//go:build !linux

package state

// ReleasePages does nothing outside Linux.
func (db *DB) ReleasePages() error { return nil }
