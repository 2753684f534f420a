package reliability

import (
	"context"
	"path/filepath"
	"testing"
)

// TestDataLossSymlinks runs the two symlink cases of part 4 with a gitaso binary built from this tree: both hold
// (before the fix, each deleted two resource groups).
func TestDataLossSymlinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gitaso and runs it")
	}
	dir := t.TempDir()
	env, err := NewEnv(EnvOptions{Dir: filepath.Join(dir, "env"), Gitaso: buildGitaso(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	cases, err := RunDataLoss(context.Background(), env, filepath.Join(dir, "cases"),
		map[string]bool{"dir-symlink-out": true, "git-symlink-manifest": true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) != 2 {
		t.Fatalf("ran %d cases, want 2", len(cases))
	}
	for _, c := range cases {
		if c.Err != nil || !c.Held {
			t.Errorf("%s: %s (err %v), want %s", c.Name, c.Outcome, c.Err, c.Want)
		} else {
			t.Logf("%s: %s", c.Name, c.Outcome)
		}
	}
}
