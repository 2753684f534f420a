package api

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/gitaso/gitaso/access"
)

// Machines authenticate with named bearer tokens. A tokens file holds one
// token a line, its name, the SHA-256 of the token and optional groups:
//
//	# NAME  sha256:HEX  [GROUP,...]
//	ci      sha256:3b5d...e1  platform-admins
//	grafana sha256:9c0a...44
//
// Only hashes are stored: the file is not a secret, and a token is shown
// once, when it is made (gitaso token add). The file is re-read when it
// changes (checked on every request that carries a bearer token) or on
// Reload (SIGHUP), so a line removed revokes its token at once, without a
// restart. A file that no longer parses accepts no token (fail closed) until
// it is fixed; the error is logged naming the file and line.

// DefaultTokenName is the name of the token of --api-token-file (one raw
// token in a file, gitaso's first way to authenticate).
const DefaultTokenName = "default"

// TokenHashPrefix starts the hash column of a tokens file.
const TokenHashPrefix = "sha256:"

var tokenNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$`)

// TokenEntry is one line of a tokens file.
type TokenEntry struct {
	Name   string
	Hash   [32]byte // SHA-256 of the token
	Groups []string
}

// Line is the entry as a line of a tokens file (without newline).
func (e TokenEntry) Line() string {
	l := e.Name + " " + TokenHashPrefix + hex.EncodeToString(e.Hash[:])
	if len(e.Groups) > 0 {
		l += " " + strings.Join(e.Groups, ",")
	}
	return l
}

// HashToken returns the SHA-256 of a token.
func HashToken(token string) [32]byte { return sha256.Sum256([]byte(token)) }

// NewToken returns a fresh random token (32 bytes, base64url, prefixed
// "gitaso_" so that secret scanners and people recognise it).
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("new token: %w", err)
	}
	return "gitaso_" + base64.RawURLEncoding.EncodeToString(b), nil
}

// ParseTokens reads a tokens file's content; errors name file and line.
func ParseTokens(r io.Reader, file string) ([]TokenEntry, error) {
	var out []TokenEntry
	names, hashes := map[string]int{}, map[[32]byte]int{}
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 {
			return nil, fmt.Errorf("%s:%d: want NAME sha256:HEX [GROUP,...], got %d fields", file, n, len(f))
		}
		e := TokenEntry{Name: f[0]}
		if !tokenNameRE.MatchString(e.Name) {
			return nil, fmt.Errorf("%s:%d: token name %q: want 1 to 64 letters, digits, '.', '_', '@' or '-'", file, n, e.Name)
		}
		hx, ok := strings.CutPrefix(f[1], TokenHashPrefix)
		b, err := hex.DecodeString(hx)
		if !ok || err != nil || len(b) != 32 {
			return nil, fmt.Errorf("%s:%d: token %s: hash: want sha256: and 64 hex digits (gitaso token add writes it; never the token itself)", file, n, e.Name)
		}
		copy(e.Hash[:], b)
		if len(f) == 3 {
			for _, g := range strings.Split(f[2], ",") {
				if g = strings.TrimSpace(g); g != "" {
					e.Groups = append(e.Groups, g)
				}
			}
		}
		if prev, ok := names[e.Name]; ok {
			return nil, fmt.Errorf("%s:%d: token name %s is already used on line %d", file, n, e.Name, prev)
		}
		if prev, ok := hashes[e.Hash]; ok {
			return nil, fmt.Errorf("%s:%d: token %s has the same hash as line %d: one token, one name", file, n, e.Name, prev)
		}
		names[e.Name], hashes[e.Hash] = n, n
		out = append(out, e)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	return out, nil
}

// Tokens are the named bearer tokens the API accepts: those of a tokens file
// (re-read when it changes) and fixed ones (--api-token-file's "default").
// Safe for concurrent use.
type Tokens struct {
	path string
	log  *slog.Logger

	mu     sync.Mutex
	fixed  map[[32]byte]TokenEntry
	byHash map[[32]byte]TokenEntry // the file's
	stat   os.FileInfo             // of the file as last read
	err    error                   // of the last read: no file token is accepted meanwhile
}

// ErrNoTokens is returned by LoadTokens for a tokens file without a token.
var ErrNoTokens = errors.New("the tokens file holds no token")

// LoadTokens reads the tokens file at path ("" for none); a file that does
// not parse is an error naming its line. log receives the reloads.
func LoadTokens(path string, log *slog.Logger) (*Tokens, error) {
	if log == nil {
		log = slog.Default()
	}
	t := &Tokens{path: path, log: log, fixed: map[[32]byte]TokenEntry{}, byHash: map[[32]byte]TokenEntry{}}
	if path == "" {
		return t, nil
	}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	if len(t.byHash) == 0 {
		return nil, fmt.Errorf("%s: %w (add one with gitaso token add --tokens-file %s NAME)", path, ErrNoTokens, path)
	}
	return t, nil
}

// AddFixed accepts token under name besides the file's (the token of
// --api-token-file, named DefaultTokenName). A name the file uses too is an
// error.
func (t *Tokens) AddFixed(name, token string, groups ...string) error {
	if token == "" {
		return errors.New("add token " + name + ": the token is empty")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	h := HashToken(token)
	for eh, e := range t.byHash {
		if e.Name == name {
			return fmt.Errorf("add token %s: %s names a token %s too", name, t.path, name)
		}
		if eh == h {
			return fmt.Errorf("add token %s: it is the token %s of %s as well: one token, one name", name, e.Name, t.path)
		}
	}
	t.fixed[h] = TokenEntry{Name: name, Hash: h, Groups: slices.Clone(groups)}
	return nil
}

// Len is how many tokens are accepted now.
func (t *Tokens) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.fixed) + len(t.byHash)
}

// Reload re-reads the tokens file (on SIGHUP). On error no token of the
// file is accepted until a read succeeds.
func (t *Tokens) Reload() error {
	if t == nil || t.path == "" {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readLocked()
}

func (t *Tokens) readLocked() error {
	b, err := os.ReadFile(t.path)
	var st os.FileInfo
	if err == nil {
		st, err = os.Stat(t.path)
	}
	var entries []TokenEntry
	if err == nil {
		entries, err = ParseTokens(bytes.NewReader(b), t.path)
	}
	t.stat = st
	if err != nil {
		if t.err == nil || t.err.Error() != err.Error() {
			t.log.Error("tokens file unreadable: no token of it is accepted until it is fixed", "file", t.path, "error", err)
		}
		t.err, t.byHash = err, map[[32]byte]TokenEntry{}
		return fmt.Errorf("read tokens: %w", err)
	}
	m := make(map[[32]byte]TokenEntry, len(entries))
	for _, e := range entries {
		m[e.Hash] = e
	}
	for h, e := range m {
		if f, ok := t.fixed[h]; ok {
			err := fmt.Errorf("%s: token %s is the token %s as well: one token, one name", t.path, e.Name, f.Name)
			t.log.Error("tokens file: no token of it is accepted until it is fixed", "file", t.path, "error", err)
			t.err, t.byHash = err, map[[32]byte]TokenEntry{}
			return fmt.Errorf("read tokens: %w", err)
		}
	}
	t.log.Info("tokens file read", "file", t.path, "tokens", len(m))
	t.err, t.byHash = nil, m
	return nil
}

// changedLocked reports whether the file is not the one last read: another
// inode (an editor's or gitaso token's rename), another size or another
// modification time.
func (t *Tokens) changedLocked() bool {
	st, err := os.Stat(t.path)
	if err != nil || t.stat == nil {
		return true
	}
	return !os.SameFile(st, t.stat) || st.Size() != t.stat.Size() || !st.ModTime().Equal(t.stat.ModTime())
}

// Lookup returns the identity of a token, re-reading the file first when it
// changed.
func (t *Tokens) Lookup(token string) (access.Identity, bool) {
	if t == nil || token == "" {
		return access.Identity{}, false
	}
	h := HashToken(token)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.path != "" && t.changedLocked() {
		_ = t.readLocked()
	}
	e, ok := t.fixed[h]
	if !ok {
		e, ok = t.byHash[h]
	}
	if !ok {
		return access.Identity{}, false
	}
	return access.Identity{Kind: access.Token, Subject: e.Name, Name: e.Name, Groups: slices.Clone(e.Groups)}, true
}
