//go:build !linux

package rss

// DropExecutablePages does nothing outside Linux.
func DropExecutablePages() (int64, error) { return 0, nil }

// ExecutableResidentKB is 0 outside Linux.
func ExecutableResidentKB() (int64, error) { return 0, nil }
