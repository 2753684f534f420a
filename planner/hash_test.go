package planner_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/planner"
)

// TestHashRequest checks the hash stored as AppliedHash: sha256 of the
// lower-cased path, a zero byte and the body, for ASCII and other paths.
func TestHashRequest(t *testing.T) {
	body := []byte(`{"location":"westeurope"}`)
	for _, path := range []string{
		"/subscriptions/5B4E/resourceGroups/RG-1?api-version=2020-06-01",
		"/subscriptions/5b4e/resourceGroups/Grüße-ÄÖ?api-version=2020-06-01",
		"",
	} {
		sum := sha256.Sum256(append([]byte(strings.ToLower(path)+"\x00"), body...))
		if got, want := planner.HashRequest(path, body), hex.EncodeToString(sum[:]); got != want {
			t.Errorf("HashRequest(%q) = %s, want %s", path, got, want)
		}
	}
}
