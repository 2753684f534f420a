//go:build !linux

package state

import "errors"

func dropCache(string) error { return errors.New("dropping a file's pages from the cache needs Linux") }
