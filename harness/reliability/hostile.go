package reliability

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// HostileOptions configure the hostile-input corpus.
type HostileOptions struct {
	Dir     string        // where the cases are generated (removed afterwards)
	Timeout time.Duration // per case
	// MemLimit kills `gitaso validate` when its resident set passes it (polled every 20 ms); the child also runs
	// with GOMEMLIMIT at two thirds of it and, when prlimit is installed, an address-space limit of four times it.
	MemLimit int64
	// Launcher is a binary whose main calls MaybeMeasure (the harness's own), which starts each case so that its
	// maximum RSS is measured alone; "" starts gitaso directly.
	Launcher string
	HugeMB   int // size of the huge file
	Objects  int // objects of the many-objects file
	Depth    int // nesting depth of the deep file
	Seed     uint64
	Progress io.Writer
}

// DefaultHostileOptions returns the defaults of `make reliability`.
func DefaultHostileOptions() HostileOptions {
	return HostileOptions{Timeout: 60 * time.Second, MemLimit: 3 << 30, HugeMB: 200, Objects: 100_000, Depth: 100_000, Seed: 1}
}

// Outcomes of a hostile case.
const (
	OutcomeRefused  = "refused"    // exit 1 with an error message
	OutcomeAccepted = "accepted"   // exit 0
	OutcomeCrashed  = "crashed"    // a Go panic or fatal error, or death by a signal the harness did not send
	OutcomeTimedOut = "timed out"  // killed at the timeout
	OutcomeMemory   = "killed:mem" // killed by the memory guard
)

// HostileCase is one generated input and what `gitaso validate` did with it.
type HostileCase struct {
	Name     string
	What     string // what the input is
	Want     string // the outcomes a robust gitaso gives, separated by "|"
	Outcome  string
	Exit     int
	Error    string // the first line of the output
	Output   string // the first 64 KiB of the output
	MaxRSS   int64  // bytes (the child's rusage)
	Duration time.Duration
}

// Wanted reports whether the outcome is one a robust gitaso gives.
func (c HostileCase) Wanted() bool {
	for _, w := range strings.Split(c.Want, "|") {
		if w == c.Outcome {
			return true
		}
	}
	return false
}

type hostileCase struct {
	name, what, want string // want: outcomes separated by "|"
	make             func(dir string) error
	args             []string // flags of `gitaso validate` besides --dir and --kustomize
}

const aliasBomb = `# YAML alias bomb ("billion laughs"): 609 bytes that expand to 10^9 strings.
# A parser expanding each alias eagerly builds 10^9 strings.
apiVersion: v1
kind: ConfigMap
metadata:
  name: bomb
  namespace: default
data:
  a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]
  b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
  c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
  d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
  e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
  f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
  g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]
  h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g,*g]
  i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h,*h]
`

const validManifest = `apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: hostile-control
  namespace: default
spec:
  location: westeurope
`

func hostileCases(o HostileOptions) []hostileCase {
	write := func(name, content string) func(string) error {
		return func(dir string) error { return os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644) }
	}
	return []hostileCase{
		{"control", "one valid ResourceGroup", OutcomeAccepted, write("rg.yaml", validManifest), nil},
		{"alias-bomb", fmt.Sprintf("%d-byte YAML alias bomb", len(aliasBomb)), OutcomeRefused, write("bomb.yaml", aliasBomb), nil},
		{"alias-bomb-kustomize", "the alias bomb listed in a kustomization.yaml", OutcomeRefused, func(dir string) error {
			if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - bomb.yaml\n"), 0o644); err != nil {
				return err
			}
			return write("bomb.yaml", aliasBomb)(dir)
		}, nil},
		{"huge-file", fmt.Sprintf("one %d MB YAML file", o.HugeMB), OutcomeRefused, func(dir string) error {
			return writeHuge(filepath.Join(dir, "huge.yaml"), int64(o.HugeMB)<<20)
		}, nil},
		{"many-objects", fmt.Sprintf("%d ResourceGroups in one file", o.Objects), OutcomeAccepted + "|" + OutcomeRefused, func(dir string) error {
			return writeMany(filepath.Join(dir, "many.yaml"), o.Objects)
		}, nil},
		{"deep-nesting", fmt.Sprintf("%d levels of [", o.Depth), OutcomeRefused,
			write("deep.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\ndata:\n  x: "+strings.Repeat("[", o.Depth)+"\n"), nil},
		{"symlink-outside", "a symlink to a manifest outside the root", OutcomeRefused, func(dir string) error {
			outside := filepath.Join(filepath.Dir(dir), "outside-"+filepath.Base(dir)+".yaml")
			if err := os.WriteFile(outside, []byte(validManifest), 0o644); err != nil {
				return err
			}
			return os.Symlink(outside, filepath.Join(dir, "outside.yaml"))
		}, nil},
		{"symlink-dev-zero", "a symlink to /dev/zero", OutcomeRefused, func(dir string) error {
			return os.Symlink("/dev/zero", filepath.Join(dir, "zero.yaml"))
		}, nil},
		{"fifo", "a named pipe nobody writes to", OutcomeRefused, func(dir string) error {
			return syscall.Mkfifo(filepath.Join(dir, "fifo.yaml"), 0o644)
		}, nil},
		{"binary", "1 MiB of random bytes named .yaml", OutcomeRefused, func(dir string) error {
			rng := rand.New(rand.NewPCG(o.Seed, 0xb1))
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			return os.WriteFile(filepath.Join(dir, "binary.yaml"), b, 0o644)
		}, nil},
		{"kustomize-objects", "4 kustomizations of 9,000 one-key ConfigMaps", OutcomeRefused, func(dir string) error {
			return writeKustomizations(dir, 4, 9000, 1)
		}, nil},
		{"kustomize-keys", "a kustomization of 2,700 ConfigMaps of 700 keys (18 MB)", OutcomeRefused, func(dir string) error {
			return writeKustomizations(dir, 1, 2700, 700)
		}, nil},
		{"helm-repeat", "a chart template repeating \"x\" 2,000,000,000 times", OutcomeRefused,
			HostileChart(`k: {{ repeat 2000000000 "x" | quote }}`), fluxArgs},
		{"helm-loops", "a chart template with three nested range until 100000 loops that write nothing", OutcomeRefused,
			HostileChart(`{{- range until 100000 }}{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}{{ end }}`), fluxArgs},
		{"helm-doubling", "a chart template doubling a string 40 times in a loop", OutcomeRefused,
			HostileChart(`{{- $s := "xx" }}{{ range until 40 }}{{ $s = cat $s $s }}{{ end }}k: {{ $s | quote }}`), fluxArgs},
		{"helm-self-map", "a chart template printing a map set into itself", OutcomeRefused,
			HostileChart(`{{- $d := dict }}{{ $_ := set $d "a" $d }}k: {{ $d | toString | quote }}`), fluxArgs},
	}
}

// writeKustomizations writes n kustomizations (app0/, app1/, ...) of
// objects ConfigMaps of keys keys each.
func writeKustomizations(dir string, n, objects, keys int) error {
	for k := range n {
		app := filepath.Join(dir, fmt.Sprintf("app%d", k))
		if err := os.MkdirAll(app, 0o755); err != nil {
			return err
		}
		kus := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - cms.yaml\n"
		if err := os.WriteFile(filepath.Join(app, "kustomization.yaml"), []byte(kus), 0o644); err != nil {
			return err
		}
		var b strings.Builder
		for i := range objects {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%d-%d\n  namespace: default\ndata:\n", k, i)
			for j := range keys {
				fmt.Fprintf(&b, "  k%d: v%d\n", j, j)
			}
		}
		if err := os.WriteFile(filepath.Join(app, "cms.yaml"), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fluxArgs follow the Flux objects of a hostile chart case (HostileChart).
var fluxArgs = []string{"--flux", "--path", "clusters/x"}

// HostileChart returns a case's maker: a Flux repository (entry
// clusters/x) with one HelmRelease, flux-system/hostile, of the chart
// charts/hostile in the repository, whose one template
// (templates/cm.yaml) holds a ConfigMap whose data is the given template
// text.
func HostileChart(data string) func(dir string) error {
	files := HostileChartFiles("clusters/x", "charts/hostile", data)
	return func(dir string) error {
		for p, s := range files {
			full := filepath.Join(dir, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

// HostileChartFiles are the files of HostileChart with the entry
// directory and the chart's directory given (repository paths).
func HostileChartFiles(entry, chartDir, data string) map[string]string {
	return map[string]string{
		entry + "/release.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  url: https://example.com/hostile.git
  ref:
    branch: main
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: hostile
  namespace: flux-system
spec:
  interval: 5m
  chart:
    spec:
      chart: ./` + chartDir + `
      sourceRef:
        kind: GitRepository
        name: flux-system
`,
		chartDir + "/Chart.yaml":        "apiVersion: v2\nname: hostile\nversion: 0.1.0\n",
		chartDir + "/templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: hostile\ndata:\n  " + data + "\n",
	}
}

func writeHuge(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	n, _ := w.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: huge\n  namespace: default\ndata:\n  blob: |\n")
	line := "    " + strings.Repeat("x", 123) + "\n"
	for written := int64(n); written < size; written += int64(len(line)) {
		if _, err := w.WriteString(line); err != nil {
			f.Close()
			return err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writeMany(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, "---\napiVersion: resources.azure.com/v1api20200601\nkind: ResourceGroup\nmetadata:\n  name: rg-%06d\n  namespace: default\nspec:\n  location: westeurope\n", i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// RunHostile generates every case under opts.Dir, runs `gitaso validate --dir <case>` on each and removes the
// cases again.
func RunHostile(ctx context.Context, gitaso string, opts HostileOptions) ([]HostileCase, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	defer os.RemoveAll(opts.Dir)
	prlimit, _ := exec.LookPath("prlimit")
	var out []HostileCase
	for _, hc := range hostileCases(opts) {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		dir := filepath.Join(opts.Dir, hc.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return out, err
		}
		if err := hc.make(dir); err != nil {
			return out, fmt.Errorf("reliability: generate %s: %w", hc.name, err)
		}
		c, err := validate(ctx, gitaso, prlimit, dir, opts, hc.args...)
		if err != nil {
			return out, err
		}
		c.Name, c.What, c.Want = hc.name, hc.what, hc.want
		out = append(out, c)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "  %-22s %-10s %6.1fs %5d MiB  %s\n", c.Name, c.Outcome, c.Duration.Seconds(), c.MaxRSS>>20, c.Error)
		}
		_ = os.RemoveAll(dir) // the huge file goes at once
	}
	return out, nil
}

// validate runs one case with the timeout and the memory guard.
func validate(ctx context.Context, gitaso, prlimit, dir string, o HostileOptions, extra ...string) (HostileCase, error) {
	var c HostileCase
	args := append([]string{gitaso, "validate", "--dir", dir, "--kustomize"}, extra...)
	if prlimit != "" {
		args = append([]string{prlimit, "--as=" + strconv.FormatInt(4*o.MemLimit, 10), "--"}, args...)
	}
	var report, reportR *os.File
	if o.Launcher != "" {
		args = append([]string{o.Launcher, MeasureArg}, args...)
		var err error
		if reportR, report, err = os.Pipe(); err != nil {
			return c, err
		}
		defer reportR.Close()
	}
	cmd := exec.Command(args[0], args[1:]...)
	home := filepath.Join(filepath.Dir(dir), "home")
	_ = os.MkdirAll(home, 0o755)
	cmd.Env = append(os.Environ(), "HOME="+home, "GOMEMLIMIT="+strconv.FormatInt(o.MemLimit*2/3, 10))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	head := &headBuffer{max: 64 << 10}
	cmd.Stdout, cmd.Stderr = head, head
	var lines chan string
	if report != nil {
		cmd.ExtraFiles = []*os.File{report}
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		if report != nil {
			report.Close()
		}
		return c, fmt.Errorf("reliability: start %s: %w", args[0], err)
	}
	pid := cmd.Process.Pid // the process group; the measured process is the launcher's child when there is one
	measured := pid
	if report != nil {
		report.Close() // the launcher holds the write end now
		lines = make(chan string, 4)
		go func() {
			sc := bufio.NewScanner(reportR)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		measured = 0
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(o.Timeout)
	defer deadline.Stop()
	var werr error
	reason, result := "", ""
	var peak int64
	readLine := func(l string) {
		if rest, ok := strings.CutPrefix(l, "pid "); ok {
			measured, _ = strconv.Atoi(rest)
		} else if strings.HasPrefix(l, "exit ") {
			result = l
		}
	}
wait:
	for {
		select {
		case werr = <-done:
			break wait
		case l, ok := <-lines:
			if !ok {
				lines = nil
				continue
			}
			readLine(l)
		case <-tick.C:
			if measured == 0 {
				continue
			}
			rss, hwm := memOf(measured)
			peak = max(peak, hwm, rss)
			if rss > o.MemLimit && reason == "" {
				reason = OutcomeMemory
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		case <-deadline.C:
			if reason == "" {
				reason = OutcomeTimedOut
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		case <-ctx.Done():
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			<-done
			return c, ctx.Err()
		}
	}
	if lines != nil {
		for l := range lines { // the launcher has exited: its last lines are in the pipe
			readLine(l)
		}
	}
	c.Duration = time.Since(start)
	c.Exit = cmd.ProcessState.ExitCode()
	signal := 0
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			signal = int(ws.Signal())
		}
	} else if werr != nil {
		return c, werr
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		// Without a launcher this includes the harness's own peak (Linux counts the forked image's RSS).
		c.MaxRSS = ru.Maxrss << 10
	}
	if report != nil {
		c.MaxRSS = peak
		var exit, sig int
		var maxrss int64
		if _, err := fmt.Sscanf(result, "exit %d %d %d", &exit, &sig, &maxrss); err == nil {
			c.Exit, signal, c.MaxRSS = exit, sig, max(maxrss, peak)
		}
	}
	output := head.String()
	c.Output = output
	c.Error = firstLine(output)
	if signal != 0 && reason == "" {
		c.Error = strings.TrimSuffix("killed by "+syscall.Signal(signal).String()+"; "+c.Error, "; ")
	}
	switch {
	case reason != "":
		c.Outcome = reason
	case signal != 0, strings.Contains(output, "panic: "), strings.Contains(output, "fatal error: "):
		c.Outcome = OutcomeCrashed
		if i := strings.Index(output, "fatal error: "); i >= 0 {
			c.Error = firstLine(output[i:])
		} else if i := strings.Index(output, "panic: "); i >= 0 {
			c.Error = firstLine(output[i:])
		}
	case c.Exit == 0:
		c.Outcome = OutcomeAccepted
	default:
		c.Outcome = OutcomeRefused
	}
	return c, nil
}

// MeasureArg, as the first argument of a binary whose main calls MaybeMeasure, makes it a launcher: it runs the
// rest of its arguments as a child and reports the child's pid and, when it ends, its exit code, signal and
// maximum RSS on file descriptor 3. Launched from the harness itself, the child's rusage would include the
// harness's RSS (Linux counts the image a process had before exec); launched from a fresh small process it
// measures the child alone.
const MeasureArg = "-reliability-measure-child"

// MaybeMeasure runs the launcher and exits when os.Args asks for it (see MeasureArg); otherwise it returns.
func MaybeMeasure() {
	if len(os.Args) < 3 || os.Args[1] != MeasureArg {
		return
	}
	report := os.NewFile(3, "report")
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "reliability launcher:", err)
		os.Exit(127)
	}
	fmt.Fprintf(report, "pid %d\n", cmd.Process.Pid)
	_ = cmd.Wait()
	ps := cmd.ProcessState
	var maxrss int64
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		maxrss = ru.Maxrss << 10
	}
	sig := 0
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		sig = int(ws.Signal())
	}
	fmt.Fprintf(report, "exit %d %d %d\n", ps.ExitCode(), sig, maxrss)
	os.Exit(0)
}

// memOf reads VmRSS and VmHWM (the peak) of a process in bytes (0 when gone).
func memOf(pid int) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 160 {
				l = l[:160] + "…"
			}
			return l
		}
	}
	return ""
}

// headBuffer keeps the first max bytes written.
type headBuffer struct {
	buf bytes.Buffer
	max int
}

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - h.buf.Len(); room > 0 {
		h.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (h *headBuffer) String() string { return h.buf.String() }
