package e2e_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
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
	checkPhasePlans(t, filepath.Join(dir, "demo", "gitaso.db"))
}

// checkPhasePlans: the startup run's second phase is recorded as such
// (phase 2 of the first run), and the first phase's plan is kept beside the
// latest (the status page shows the run's whole plan, issue 26).
func checkPhasePlans(t *testing.T, path string) {
	t.Helper()
	db, err := state.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	runs, err := db.Runs(0)
	if err != nil {
		t.Fatal(err)
	}
	var second *record.Run
	for i := range runs {
		if runs[i].Phase == 2 {
			second = &runs[i]
		}
	}
	if second == nil || second.PhaseOf == 0 {
		t.Fatalf("no run is recorded as phase 2 of another: %+v", runs)
	}
	first, gz, err := db.PhasePlanStored(second.PhaseOf)
	if err != nil || first == nil {
		t.Fatalf("the plan of run %d (phase 1) is not kept: %v", second.PhaseOf, err)
	}
	if gz {
		zr, err := gzip.NewReader(bytes.NewReader(first))
		if err != nil {
			t.Fatal(err)
		}
		if first, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var p struct {
		Resources []struct {
			Namespace, Action string
		} `json:"resources"`
	}
	if err := json.Unmarshal(first, &p); err != nil {
		t.Fatal(err)
	}
	creates := 0
	for _, r := range p.Resources {
		if r.Action == "create" {
			creates++
		}
	}
	if creates != 11 {
		t.Errorf("phase 1's kept plan creates %d resources, want the platform's 11", creates)
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

// TestDemoSecondStartKeepsTheFirst: while a demo runs, a second `make demo`
// in the same directory (other ports), one on the same ports (another
// directory) and one in a directory that is not a demo's are refused,
// naming why, and delete nothing: the first demo's repository, state file,
// logs, CA and emulator.env survive and it still applies a commit. Before,
// the script deleted its directory before any check.
func TestDemoSecondStartKeepsTheFirst(t *testing.T) {
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
	work := filepath.Join(dir, "demo")
	demo := func(workDir, eport, aport string, oneshot bool) *exec.Cmd {
		cmd := exec.Command("bash", "../scripts/demo.sh")
		cmd.Env = append(os.Environ(), "GITASO_BIN="+bin, "DEMO_DIR="+workDir,
			"DEMO_EMULATOR_PORT="+eport, "DEMO_API_PORT="+aport)
		if oneshot {
			cmd.Env = append(cmd.Env, "DEMO_ONESHOT=1")
		}
		return cmd
	}

	// The first demo, left running.
	eport, aport := freePort(t), freePort(t)
	first := demo(work, eport, aport, false)
	first.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	first.Stderr = first.Stdout
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	t.Cleanup(func() {
		_ = first.Process.Signal(syscall.SIGTERM) // its trap stops the emulator and the daemon
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	})
	up := make(chan struct{})
	var firstOut strings.Builder
	var firstErr error // the first demo's exit, once exited is closed
	var mu sync.Mutex
	go func() {
		defer close(exited)
		sc := bufio.NewScanner(out)
		once := sync.Once{}
		for sc.Scan() {
			mu.Lock()
			firstOut.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if strings.Contains(sc.Text(), "gitaso is running") {
				once.Do(func() { close(up) })
			}
		}
		err := first.Wait()
		mu.Lock()
		firstErr = err
		mu.Unlock()
	}()
	select {
	case <-up:
	case <-exited:
		t.Fatalf("the first demo exited:\n%s", firstOut.String())
	case <-time.After(4 * time.Minute):
		t.Fatal("the first demo did not come up")
	}
	kept := []string{"demo.pid", "emulator.env", "emulator.log", "emulator", "gitaso.db", "gitaso.log", "repo/.git", "repo/team-a/servicebus.yaml"}
	envBefore, err := os.ReadFile(filepath.Join(work, "emulator.env"))
	if err != nil {
		t.Fatal(err)
	}

	notEmpty := filepath.Join(dir, "mine")
	if err := os.MkdirAll(notEmpty, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(notEmpty, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name               string
		work, eport, aport string
		want               string
	}{
		{"same directory, other ports", work, freePort(t), freePort(t), "is running in " + work},
		{"same ports, other directory", filepath.Join(dir, "other"), eport, aport, "port " + eport + " (the emulator) is already in use"},
		{"a directory that is not a demo's", notEmpty, freePort(t), freePort(t), "holds no demo: not deleting it"},
	} {
		second, err := demo(tc.work, tc.eport, tc.aport, true).CombinedOutput()
		if err == nil || !strings.Contains(string(second), tc.want) {
			t.Errorf("%s: second start: %v, want refused with %q:\n%s", tc.name, err, tc.want, second)
		}
	}
	for _, f := range kept {
		if _, err := os.Stat(filepath.Join(work, filepath.FromSlash(f))); err != nil {
			t.Errorf("the first demo's %s: %v", f, err)
		}
	}
	if envAfter, _ := os.ReadFile(filepath.Join(work, "emulator.env")); string(envAfter) != string(envBefore) {
		t.Errorf("emulator.env changed:\n%s\nwas\n%s", envAfter, envBefore)
	}
	if b, err := os.ReadFile(filepath.Join(notEmpty, "notes.txt")); err != nil || string(b) != "mine" {
		t.Errorf("a directory that is not a demo's lost its file: %q %v", b, err)
	}

	// The first demo still follows its repository: the change command it printed, run as a newcomer would (no
	// Git identity configured anywhere), commits, and the commit is applied.
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", filepath.Join(work, "repo")}, args...)...)
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
		return strings.TrimSpace(string(b))
	}
	var printed string
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		mu.Lock()
		printed = firstOut.String()
		mu.Unlock()
		if strings.Contains(printed, "\nLogs: ") || time.Now().After(end) {
			break
		}
	}
	change := strings.TrimSpace(between(printed, "applies exactly that change:\n", "\n"))
	if !strings.HasPrefix(change, "cd "+work+"/repo && ") {
		t.Fatalf("the demo printed no change command:\n%s", printed)
	}
	run := exec.Command("bash", "-c", change)
	home := t.TempDir()
	run.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null"}
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the printed change command %q failed without a Git identity: %v\n%s", change, err, b)
	}
	rev := git("rev-parse", "HEAD")
	deadline := time.Now().Add(time.Minute)
	for {
		// Reading needs a caller: the demo's own token (demo-token, named "demo").
		token, _ := os.ReadFile(filepath.Join(work, "demo-token"))
		body, _ := exec.Command("curl", "-fsS", "-H", "Authorization: Bearer "+strings.TrimSpace(string(token)),
			"http://127.0.0.1:"+aport+"/api/v1/runs").Output()
		// A run's revision is the commit and, after a "+", the values it read.
		if strings.Contains(between(string(body), `"revision":"`+rev, "}"), `"outcome":"succeeded"`) {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(work, "gitaso.log"))
			t.Fatalf("the first demo did not apply %s:\n%s\n--- gitaso.log ---\n%s", rev, body, log)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Ctrl-C ends the demo cleanly: exit 0 (make says no "Error 130"), saying so.
	if err := first.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the demo did not stop on SIGINT")
	}
	mu.Lock()
	defer mu.Unlock()
	if firstErr != nil || !strings.Contains(firstOut.String(), "demo stopped;") {
		t.Errorf("after SIGINT the demo exited with %v (want 0) and said:\n%s", firstErr, firstOut.String())
	}
}
