package emulator

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// newUUID returns a random (version 4) UUID in its canonical lower-case form.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("emulator: crypto/rand: %v", err))
	}
	b[6] = (b[6] & 0x0f) | 0x40
	b[8] = (b[8] & 0x3f) | 0x80
	return formatUUID(b)
}

func formatUUID(b [16]byte) string {
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:16])
	return string(out[:])
}

// isGUID reports whether s is a GUID in 8-4-4-4-12 hex form (any case).
func isGUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < 36; i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return ('0' <= c && c <= '9') || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}

func randomSecret(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("emulator: crypto/rand: %v", err))
	}
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789~._-"
	out := make([]byte, n)
	for i, v := range b {
		out[i] = alphabet[int(v)%len(alphabet)]
	}
	return string(out)
}

// lastSegment returns the part of an ARM ID after its last slash.
func lastSegment(id string) string {
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		return id[i+1:]
	}
	return id
}

// scopeContains reports whether the (lower-cased) scope contains the (lower-cased) target ID:
// the target equals the scope or lies below it. The root scope "/" contains everything.
func scopeContains(scope, target string) bool {
	if scope == "" || scope == "/" {
		return true
	}
	if len(target) < len(scope) || target[:len(scope)] != scope {
		return false
	}
	return len(target) == len(scope) || target[len(scope)] == '/'
}

func nowUTC() time.Time { return time.Now().UTC() }

func armTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.0000000Z") }

// getPath walks nested objects of a decoded JSON value.
func getPath(m map[string]any, path ...string) (any, bool) {
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		cur, ok = obj[p]
		if !ok {
			return nil, false
		}
	}
	return cur, true
}

func getString(m map[string]any, path ...string) string {
	v, _ := getPath(m, path...)
	s, _ := v.(string)
	return s
}

// ensureObject returns m[key] as an object, creating it when absent or not an object.
func ensureObject(m map[string]any, key string) map[string]any {
	if v, ok := m[key].(map[string]any); ok {
		return v
	}
	v := map[string]any{}
	m[key] = v
	return v
}

// mergePatch applies an RFC 7386 JSON merge patch to target in place.
func mergePatch(target, patch map[string]any) {
	for k, pv := range patch {
		if pv == nil {
			delete(target, k)
			continue
		}
		if pm, ok := pv.(map[string]any); ok {
			if tm, ok := target[k].(map[string]any); ok {
				mergePatch(tm, pm)
				continue
			}
			nm := map[string]any{}
			mergePatch(nm, pm)
			target[k] = nm
			continue
		}
		target[k] = pv
	}
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("emulator: marshal: %v", err))
	}
	return b
}

func deepCopyJSON(v map[string]any) map[string]any {
	var out map[string]any
	if err := json.Unmarshal(mustJSON(v), &out); err != nil {
		panic(fmt.Sprintf("emulator: copy: %v", err))
	}
	return out
}

func encodeStd(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
