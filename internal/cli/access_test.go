package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeRefusesBadPolicy: serve does not start with a policy file that
// does not parse, and says which file and line.
func TestServeRefusesBadPolicy(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.csv")
	if err := os.WriteFile(policy, []byte("default, role:readonly\np, role:x, namespaces, write, team-a\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := run(t, "serve", "--dir", "../../examples/onboarding", "--state", filepath.Join(dir, "s.db"),
		"--listen", "127.0.0.1:0", "--policy-file", policy)
	if err == nil || !strings.Contains(err.Error()+stderr, policy+`:2: invalid policy: right "write"`) {
		t.Errorf("serve with a bad policy: %v\n%s", err, stderr)
	}
}
