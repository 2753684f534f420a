package e2e_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestDemo runs `make demo`'s script once through (DEMO_ONESHOT=1): the
// emulator, a Git repository made from examples/onboarding, the daemon, two
// commits, and every resource Ready — the newcomer's first command keeps
// working.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary and runs the demo")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gitaso")
	build := exec.Command("go", "build", "-tags", "kustomize_disable_go_plugin_support", "-o", bin, "../cmd/gitaso")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command("bash", "../scripts/demo.sh")
	cmd.Env = append(os.Environ(),
		"DEMO_ONESHOT=1", "GITASO_BIN="+bin, "DEMO_DIR="+filepath.Join(dir, "demo"),
		"DEMO_EMULATOR_PORT="+freePort(t), "DEMO_API_PORT="+freePort(t))
	out, err := cmd.CombinedOutput()
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "demo", "gitaso.log"))
		t.Fatalf("demo: %v\n%s\n--- gitaso.log ---\n%s", err, out, log)
	}
	for _, want := range []string{"platform: 11/11 resources Ready", "team-a: 7/7 resources Ready", "gitaso is running",
		"substituted into team-a/aso-credential in the same run"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// One commit, one run: team-a's objects were known after apply and applied in the run's second phase,
	// nobody copied the clientId.
	log, _ := os.ReadFile(filepath.Join(dir, "demo", "gitaso.log"))
	if !strings.Contains(string(log), `msg="applying the objects whose values exist now" phase=2`) {
		t.Errorf("the startup run had no second phase:\n%s", log)
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}
