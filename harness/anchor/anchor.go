package anchor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/source"
)

// ErrMissingASO is returned when the ASO controller binary or the CRD directory is not given or absent.
var ErrMissingASO = errors.New("ASO's controller binary and CRDs are built outside this repository")

// Options configure Run.
type Options struct {
	Controller string // ASO's controller binary (v2/cmd/controller), built by hand
	CRDs       string // directory of ASO CRDs and webhook configurations (controller-gen output), made by hand
	KubeAssets string // directory holding kube-apiserver and etcd (scripts/kube-binaries.sh)
	Gitaso     string // gitaso binary
	Out        string // directory for logs, write logs and results
	Workload   Workload
	// Parallelism is how many objects the harness applies to the cluster at once (server-side apply) and
	// gitaso's --parallelism (concurrent ARM operations).
	Parallelism int
	// Latency is the emulator's default LRO duration (the same for both sides).
	Latency time.Duration
	// Timeout bounds the wait for every resource to be Ready, per side.
	Timeout time.Duration
	// IdlePeriod, when set, is both sides' sync period (ASO's AZURE_SYNC_PERIOD, gitaso's --sync-period): after
	// everything is Ready the harness counts the ARM requests of one such period plus 10%.
	IdlePeriod time.Duration
	// Restart, when set, restarts each side's controller once everything is Ready (and after the idle
	// period) and measures the ARM requests and the time until ARM is quiet for 10 s.
	Restart bool
	// HandoverStale, in a hand-over run, leaves ASO's object with its old spec while gitaso changes the
	// resource (by default the change is applied to ASO's object too, as ASO's repository would be updated
	// before the way back): what the way back does when ASO's objects are stale.
	HandoverStale bool
	// Sides limits the run to "aso" or "gitaso" ("" both).
	Sides  string
	Logger *slog.Logger
}

// Side is one side's figures.
type Side struct {
	Name        string           `json:"name"`
	Resources   int              `json:"resources"`
	Ready       bool             `json:"ready"`
	NotReady    []string         `json:"notReady,omitempty"`
	Seconds     float64          `json:"secondsToAllReady"`
	Requests    int64            `json:"armRequests"`
	Throttled   int64            `json:"throttled"`
	ByOperation map[string]int64 `json:"byOperation"`
	Processes   []ProcUsage      `json:"processes"`
	CPUSeconds  float64          `json:"cpuSeconds"`
	PeakRSSMiB  float64          `json:"peakRssMiB"` // sum of the processes' peaks
	Idle        *Window          `json:"idle,omitempty"`
	Restart     *Window          `json:"restart,omitempty"`
	Error       string           `json:"error,omitempty"`
	writes      []emulator.WriteRecord
	final       []emulator.StoredResource
	baseline    map[string]bool // lower-cased IDs stored before the workload (the harness's role assignments)
}

// Window is the ARM traffic of a period after everything was Ready.
type Window struct {
	Seconds     float64          `json:"seconds"`
	Requests    int64            `json:"armRequests"`
	ByOperation map[string]int64 `json:"byOperation"`
}

// Result is one workload through both sides.
type Result struct {
	Workload    string  `json:"workload"`
	Note        string  `json:"note"`
	Objects     int     `json:"objects"` // manifest objects (ASO resources, ConfigMaps, Secrets)
	ASOObjects  int     `json:"asoResources"`
	Parallelism int     `json:"parallelism"`
	Latency     string  `json:"emulatorLatency"`
	ASO         *Side   `json:"aso,omitempty"`
	Gitaso      *Side   `json:"gitaso,omitempty"`
	Oracle      *Oracle `json:"oracle,omitempty"`
}

// Check returns ErrMissingASO, wrapped with what is missing, unless the controller binary and CRD directory
// exist.
func (o Options) Check() error {
	var missing []string
	if fi, err := os.Stat(o.Controller); o.Controller == "" || err != nil || fi.IsDir() {
		missing = append(missing, fmt.Sprintf("ASO_CONTROLLER=%q (the v2/cmd/controller binary)", o.Controller))
	}
	if fi, err := os.Stat(o.CRDs); o.CRDs == "" || err != nil || !fi.IsDir() {
		missing = append(missing, fmt.Sprintf("ASO_CRDS=%q (a directory of ASO CRDs and webhook configurations)", o.CRDs))
	}
	if len(missing) > 0 {
		return fmt.Errorf("anchor: %w: missing %s. The harness only reuses them: the tool library's rule forbids committing "+
			"a fetched repository's code, a binary built from it or a recipe that builds it, so they are built by hand outside "+
			"this repository (docs/aso-anchor.md says what they are, not how to build them)", ErrMissingASO, strings.Join(missing, " and "))
	}
	return nil
}

// Run applies the workload through ASO and through gitaso, each against a fresh emulator, and compares.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Parallelism <= 0 {
		o.Parallelism = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Minute
	}
	if o.Sides != "gitaso" {
		if err := o.Check(); err != nil {
			return nil, err
		}
	}
	out, err := filepath.Abs(filepath.Join(o.Out, o.Workload.Name))
	if err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	_ = os.RemoveAll(out)
	manifests := filepath.Join(out, "manifests")
	if err := os.MkdirAll(manifests, 0o755); err != nil {
		return nil, fmt.Errorf("anchor: %w", err)
	}
	if err := o.Workload.Write(manifests); err != nil {
		return nil, fmt.Errorf("anchor: workload %s: %w", o.Workload.Name, err)
	}
	snap, err := source.NewDir(manifests, "").Fetch(ctx)
	if err != nil {
		return nil, fmt.Errorf("anchor: workload %s: %w", o.Workload.Name, err)
	}
	res := &Result{Workload: o.Workload.Name, Note: o.Workload.Note, Objects: len(snap.Objects), Parallelism: o.Parallelism, Latency: o.Latency.String()}
	for _, obj := range snap.Objects {
		if isASO(obj) {
			res.ASOObjects++
		}
	}
	if o.Sides != "gitaso" {
		res.ASO = runASO(ctx, o, out, snap.Objects, res.ASOObjects)
	}
	if o.Sides != "aso" {
		res.Gitaso = runGitaso(ctx, o, out, manifests, res.ASOObjects)
	}
	if res.ASO != nil && res.Gitaso != nil {
		orc := compare(res.ASO.writes, res.Gitaso.writes, withoutBaseline(res.ASO), withoutBaseline(res.Gitaso))
		res.Oracle = &orc
	}
	for _, s := range []*Side{res.ASO, res.Gitaso} {
		if s != nil {
			if err := writeJSON(filepath.Join(out, s.Name+"-writes.json"), s.writes); err != nil {
				return res, err
			}
			if err := writeJSON(filepath.Join(out, s.Name+"-final.json"), s.final); err != nil {
				return res, err
			}
		}
	}
	return res, writeJSON(filepath.Join(out, "result.json"), res)
}

// newEmulator starts a fresh emulator with ARM's throttling and a write log.
func newEmulator(o Options, wl *writeLog) (*emulator.Emulator, error) {
	emu, err := emulator.New(emulator.WithDefaultLatency(o.Latency), emulator.WithWriteLog(wl.add), emulator.WithRequestLogSize(0))
	if err != nil {
		return nil, fmt.Errorf("anchor: emulator: %w", err)
	}
	return emu, nil
}

func fill(s *Side, emu *emulator.Emulator, wl *writeLog) {
	st := emu.Stats()
	s.Requests, s.Throttled, s.ByOperation = st.Requests, st.Throttled, st.ByOperation
	s.writes, s.final = wl.records(), emu.Resources()
}

func total(s *Side) {
	s.CPUSeconds, s.PeakRSSMiB = 0, 0
	for _, p := range s.Processes {
		s.CPUSeconds += p.CPUSeconds
		s.PeakRSSMiB += p.PeakRSSMiB
	}
}

func runASO(ctx context.Context, o Options, out string, objs []manifest.Object, want int) *Side {
	s := &Side{Name: "aso", Resources: want}
	if err := runASOSide(ctx, o, out, objs, s); err != nil {
		s.Error = err.Error()
		o.Logger.Error("ASO side", "err", err)
	}
	return s
}

func runASOSide(ctx context.Context, o Options, out string, objs []manifest.Object, s *Side) (err error) {
	wl := &writeLog{}
	emu, err := newEmulator(o, wl)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, emu.Close()) }()
	hostMI := emu.HostManagedIdentity()
	if err := emu.AssignRole(hostMI.PrincipalID, "Owner", "/subscriptions/"+emu.SubscriptionID()); err != nil {
		return fmt.Errorf("anchor: grant the managed identity Owner: %w", err)
	}
	dir := filepath.Join(out, "aso")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	caFile, _, err := writeCA(dir, emu)
	if err != nil {
		return err
	}
	o.Logger.Info("starting kube-apiserver and etcd, installing CRDs", "crds", o.CRDs)
	cl, err := startCluster(ctx, o.KubeAssets, o.CRDs, dir)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cl.stop()) }()
	kobjs, err := cl.mapObjects(objs)
	if err != nil {
		return err
	}
	if err := cl.ensureNamespaces(ctx, kobjs); err != nil {
		return err
	}
	env := asoEnv(emu, caFile, cl.kubeconfig, o.IdlePeriod)
	logFile := filepath.Join(dir, "controller.log")
	p, err := startASO(ctx, o.Logger, o.Controller, cl, env, logFile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.stop()) }()
	emu.ResetStats() // the count starts with the workload (not the controller's start-up)
	s.baseline = ids(emu)
	start := time.Now()
	if err := cl.applyAll(ctx, kobjs, o.Parallelism); err != nil {
		return err
	}
	o.Logger.Info("ASO: applied", "objects", len(kobjs), "in", time.Since(start).Round(time.Millisecond))
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	werr := cl.waitReady(wctx, kobjs, progress(o.Logger, "aso"))
	cancel()
	s.Seconds = time.Since(start).Seconds()
	s.Ready = werr == nil
	if werr != nil {
		s.NotReady = cl.notReady(ctx, kobjs)
		o.Logger.Warn("ASO: not all Ready", "err", werr, "notReady", first(s.NotReady, 10))
	}
	fill(s, emu, wl)
	s.Processes = append(s.Processes, cl.usage()...)
	if u, err := p.usage(); err == nil {
		s.Processes = append(s.Processes, u)
	}
	total(s)
	if o.IdlePeriod > 0 && s.Ready {
		s.Idle = idleWindow(ctx, emu, o.IdlePeriod+o.IdlePeriod/10)
	}
	if o.Restart && s.Ready {
		if err := p.stop(); err != nil {
			return err
		}
		emu.ResetStats()
		rstart := time.Now()
		if p, err = startASO(ctx, o.Logger, o.Controller, cl, env, logFile); err != nil {
			return err
		}
		s.Restart = quietWindow(ctx, emu, rstart)
	}
	// The final stores are compared after any restart: a restart must not change ARM.
	s.final = emu.Resources()
	return nil
}

func runGitaso(ctx context.Context, o Options, out, manifests string, want int) *Side {
	s := &Side{Name: "gitaso", Resources: want}
	if err := runGitasoSide(ctx, o, out, manifests, s); err != nil {
		s.Error = err.Error()
		o.Logger.Error("gitaso side", "err", err)
	}
	return s
}

func runGitasoSide(ctx context.Context, o Options, out, manifests string, s *Side) (err error) {
	wl := &writeLog{}
	emu, err := newEmulator(o, wl)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, emu.Close()) }()
	dir := filepath.Join(out, "gitaso")
	repo := filepath.Join(dir, "repo")
	if err := os.MkdirAll(repo, 0o755); err != nil {
		return fmt.Errorf("anchor: %w", err)
	}
	_, cloudFile, err := writeCA(dir, emu)
	if err != nil {
		return err
	}
	syncPeriod := o.IdlePeriod
	if syncPeriod <= 0 {
		syncPeriod = time.Hour
	}
	logFile := filepath.Join(dir, "gitaso.log")
	state := filepath.Join(dir, "gitaso.db")
	// gitaso starts on an empty directory, as ASO starts before anything is applied; the manifests are then
	// copied in and a sync is requested, which starts the clock.
	p, err := startGitaso(ctx, o.Logger, o.Gitaso, repo, state, cloudFile, emu, o.Parallelism, syncPeriod, logFile)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, p.stop()) }()
	if err := waitIdle(ctx, emu, 2*time.Second); err != nil {
		return err
	}
	if err := copyDir(manifests, repo); err != nil {
		return err
	}
	emu.ResetStats()
	s.baseline = ids(emu)
	start := time.Now()
	if err := p.sync(ctx); err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	werr := p.waitReady(wctx, s.Resources, 100*time.Millisecond, progress(o.Logger, "gitaso"))
	cancel()
	s.Seconds = time.Since(start).Seconds()
	s.Ready = werr == nil
	if werr != nil {
		s.NotReady = p.notReady(ctx)
		o.Logger.Warn("gitaso: not all Ready", "err", werr, "notReady", first(s.NotReady, 10))
	}
	fill(s, emu, wl)
	if u, err := p.usage(); err == nil {
		s.Processes = append(s.Processes, u)
	}
	total(s)
	if o.IdlePeriod > 0 && s.Ready {
		s.Idle = idleWindow(ctx, emu, o.IdlePeriod+o.IdlePeriod/10)
	}
	if o.Restart && s.Ready {
		if err := p.stop(); err != nil {
			return err
		}
		emu.ResetStats()
		rstart := time.Now()
		if p, err = startGitaso(ctx, o.Logger, o.Gitaso, repo, state, cloudFile, emu, o.Parallelism, syncPeriod, logFile); err != nil {
			return err
		}
		s.Restart = quietWindow(ctx, emu, rstart)
	}
	s.final = emu.Resources()
	return nil
}

// idleWindow counts the ARM requests of d.
func idleWindow(ctx context.Context, emu *emulator.Emulator, d time.Duration) *Window {
	emu.ResetStats()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	st := emu.Stats()
	return &Window{Seconds: d.Seconds(), Requests: st.Requests, ByOperation: st.ByOperation}
}

// quietWindow waits until ARM has had no request for 10 s (at most 5 minutes) and returns the traffic since
// start, its duration ending at the last request.
func quietWindow(ctx context.Context, emu *emulator.Emulator, start time.Time) *Window {
	last, lastN := time.Now(), int64(-1)
	for time.Since(last) < 10*time.Second && time.Since(start) < 5*time.Minute && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
		if n := emu.Stats().Requests; n != lastN {
			last, lastN = time.Now(), n
		}
	}
	st := emu.Stats()
	return &Window{Seconds: last.Sub(start).Seconds(), Requests: st.Requests, ByOperation: st.ByOperation}
}

// waitIdle waits until the emulator has seen no request for quiet.
func waitIdle(ctx context.Context, emu *emulator.Emulator, quiet time.Duration) error {
	last, lastN := time.Now(), int64(-1)
	for time.Since(last) < quiet {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if n := emu.Stats().Requests; n != lastN {
			last, lastN = time.Now(), n
		}
	}
	return nil
}

func progress(log *slog.Logger, side string) func(int, int) {
	lastLog := time.Time{}
	return func(ready, total int) {
		if ready == total || time.Since(lastLog) > 5*time.Second {
			lastLog = time.Now()
			log.Info(side+": ready", "ready", ready, "of", total)
		}
	}
}

func copyDir(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("anchor: %w", err)
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// SortedOps returns byOperation's keys, largest count first.
func SortedOps(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

func ids(emu *emulator.Emulator) map[string]bool {
	out := map[string]bool{}
	for _, r := range emu.Resources() {
		out[strings.ToLower(r.ID)] = true
	}
	return out
}

// withoutBaseline returns a side's final store without what existed before its workload.
func withoutBaseline(s *Side) []emulator.StoredResource {
	var out []emulator.StoredResource
	for _, r := range s.final {
		if !s.baseline[strings.ToLower(r.ID)] {
			out = append(out, r)
		}
	}
	return out
}
