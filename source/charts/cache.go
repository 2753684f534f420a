package charts

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// cache holds archives by digest and small metadata (the last index, tag
// list, manifest or Git reference seen) by key, on disk when dir is set,
// else in memory.
//
// Layout of dir:
//
//	sha256/<hex>.tgz      archives, named by the sha256 of their content
//	meta/<kind>/<hex>     metadata, named by the sha256 of their key
type cache struct {
	dir string

	mu       sync.Mutex
	mem      map[string][]byte // digest → archive (memory mode)
	memOrder []string          // digests, oldest first
	memBytes int
	meta     map[string][]byte // kind/key → data (memory mode)
}

// maxMemoryCache bounds the archives kept in memory without a cache
// directory; the oldest are dropped first.
const maxMemoryCache = 256 << 20

func newCache(dir string) (*cache, error) {
	c := &cache{dir: dir, mem: map[string][]byte{}, meta: map[string][]byte{}}
	if dir == "" {
		return c, nil
	}
	for _, sub := range []string{"sha256", "meta"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("chart cache %s: %w", dir, err)
		}
	}
	return c, nil
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func digestOf(b []byte) string { return "sha256:" + sha256Hex(b) }

// validDigest reports whether d is "sha256:" and 64 lower-case hex digits.
func validDigest(d string) bool {
	h, ok := strings.CutPrefix(d, "sha256:")
	if !ok || len(h) != 64 {
		return false
	}
	for _, c := range h {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

func (c *cache) archivePath(digest string) string {
	return filepath.Join(c.dir, "sha256", strings.TrimPrefix(digest, "sha256:")+".tgz")
}

// get returns the archive of a digest, checked against it; a corrupt entry
// is removed and reported missing.
func (c *cache) get(digest string) ([]byte, bool) {
	if !validDigest(digest) {
		return nil, false
	}
	if c.dir == "" {
		c.mu.Lock()
		defer c.mu.Unlock()
		b, ok := c.mem[digest]
		return b, ok
	}
	p := c.archivePath(digest)
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	if len(b) > MaxArchiveSize || digestOf(b) != digest {
		_ = os.Remove(p)
		return nil, false
	}
	return b, true
}

// put stores an archive under its digest (which the caller has checked).
func (c *cache) put(digest string, b []byte) error {
	if !validDigest(digest) {
		return fmt.Errorf("chart cache: invalid digest %q", digest)
	}
	if c.dir == "" {
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.mem[digest]; ok {
			return nil
		}
		c.mem[digest] = b
		c.memOrder = append(c.memOrder, digest)
		c.memBytes += len(b)
		for c.memBytes > maxMemoryCache && len(c.memOrder) > 1 {
			old := c.memOrder[0]
			c.memOrder = c.memOrder[1:]
			c.memBytes -= len(c.mem[old])
			delete(c.mem, old)
		}
		return nil
	}
	return writeAtomic(c.archivePath(digest), b)
}

func (c *cache) metaPath(kind, key string) string {
	return filepath.Join(c.dir, "meta", kind, sha256Hex([]byte(key)))
}

// getMeta returns the metadata stored for kind and key.
func (c *cache) getMeta(kind, key string) ([]byte, bool) {
	if c.dir == "" {
		c.mu.Lock()
		defer c.mu.Unlock()
		b, ok := c.meta[kind+"/"+key]
		return b, ok
	}
	b, err := os.ReadFile(c.metaPath(kind, key))
	return b, err == nil
}

// putMeta stores metadata for kind and key.
func (c *cache) putMeta(kind, key string, b []byte) error {
	if c.dir == "" {
		c.mu.Lock()
		c.meta[kind+"/"+key] = b
		c.mu.Unlock()
		return nil
	}
	p := c.metaPath(kind, key)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	return writeAtomic(p, b)
}

// writeAtomic writes a file through a temporary file in the same directory
// and a rename, so that a reader never sees a partial file.
func writeAtomic(p string, b []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chart cache: write %s: %w", p, err)
	}
	if err = tmp.Sync(); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("chart cache: sync %s: %w", p, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("chart cache: close %s: %w", p, err)
	}
	if err = os.Rename(tmp.Name(), p); err != nil {
		return fmt.Errorf("chart cache: %w", err)
	}
	return nil
}
