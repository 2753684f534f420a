package record

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// PlanDigest names the exact held plan an approval is for: a digest of the
// revision, the hold's reason, the keys of its deletions and the unmanaged
// resources its cascade would take (16 hex digits). A plan that deletes
// anything else, or the same at another revision, has another digest, so
// it needs an approval of its own.
func (h *Hold) PlanDigest(revision string) string {
	if h == nil {
		return ""
	}
	s := sha256.New()
	for _, part := range [][]string{{"gitaso-hold-v1", revision, h.Reason}, h.Keys, h.Unmanaged} {
		s.Write([]byte(strings.Join(part, "\n")))
		s.Write([]byte{0})
	}
	return hex.EncodeToString(s.Sum(nil))[:16]
}
