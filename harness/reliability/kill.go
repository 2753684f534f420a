package reliability

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// Scenario is what a trial's killed run applies.
type Scenario string

// The scenarios, in the order trials cycle through them.
const (
	ScenarioCreate Scenario = "create" // empty → a fleet
	ScenarioUpdate Scenario = "update" // tags and queue settings change
	ScenarioDelete Scenario = "delete" // a resource group with its identity and role assignment, and a queue, removed
	ScenarioMove   Scenario = "move"   // every manifest to another namespace and name, spec.azureName keeping ARM names
)

// Scenarios lists every scenario.
var Scenarios = []Scenario{ScenarioCreate, ScenarioUpdate, ScenarioDelete, ScenarioMove}

// target returns the fleet a scenario commits after the fleet f was applied.
func (s Scenario) target(f Fleet) Fleet {
	switch s {
	case ScenarioUpdate:
		return f.Updated()
	case ScenarioDelete:
		return f.Dropping()
	case ScenarioMove:
		return f.MovedAway()
	}
	return f
}

// KillOptions configure the kill -9 trials.
type KillOptions struct {
	Trials int    // kill -9 trials to land (a run that finishes before its signal does not count)
	Seed   uint64 // trial n draws its kill point from PCG(Seed, n)
	// MaxRecoveryRuns bounds the runs after the kill that may converge the fleet.
	MaxRecoveryRuns int
	// RunTimeout bounds every gitaso process.
	RunTimeout time.Duration
	// ApproveDeletions passes --approve-deletions to the delete scenario's runs (when gitaso has the flag).
	ApproveDeletions bool
	Progress         io.Writer
}

// DefaultKillOptions returns the defaults of `make reliability`.
func DefaultKillOptions() KillOptions {
	return KillOptions{Trials: 100, Seed: 1, MaxRecoveryRuns: 4, RunTimeout: 2 * time.Minute}
}

// Trial is the record of one kill -9 trial (or, with Control, of a scenario run without a kill).
type Trial struct {
	N        int
	Scenario Scenario
	Prefix   string
	Dir      string
	Control  bool // no kill: the scenario's uninterrupted run, which also calibrates the kill points
	// Kill is the kill point: a delay (KillFraction of the scenario's calibrated duration) or, in every other
	// group of four trials, the answer to a random one of the ARM writes the scenario's control run sent.
	Kill         KillPoint
	KillFraction float64
	Killed       bool // the signal landed (the run had not finished)
	// SecondKill, in every third and fourth group of four trials, kills the first recovery run as well (by time);
	// SecondKilled says whether it landed.
	SecondKill   KillPoint
	SecondKilled bool
	// WritesBeforeKill counts the ARM writes (PUT, PATCH, DELETE) the killed process sent; InFlightAtKill the
	// long-running operations its state file recorded as in flight.
	WritesBeforeKill int
	InFlightAtKill   int
	CorruptAfterKill string
	Duration         time.Duration // of the run under test
	RecoveryRuns     int
	Held             bool // gitaso held the revision (deletion guard)
	LastExit         int
	LastOutput       string
	Verdict          Verdict
	Error            string // the harness could not run the trial (setup did not converge, ARM reads failed)
}

// Converged reports whether the trial ended converged.
func (t Trial) Converged() bool { return t.Error == "" && t.Verdict.Converged() }

// harness runs trials in one Env.
type harness struct {
	env    *Env
	opts   KillOptions
	est    map[Scenario]time.Duration
	writes map[Scenario]int // ARM writes of the control runs
	faults emulator.Faults  // in force while gitaso runs (never during the harness's own reads)
}

func newHarness(env *Env, opts KillOptions) *harness {
	return &harness{env: env, opts: opts, est: map[Scenario]time.Duration{}, writes: map[Scenario]int{}}
}

// apply runs gitaso once under the harness's faults and returns the run with the ARM requests it made.
func (h *harness) apply(ctx context.Context, repo *Repo, dir string, kp KillPoint, extra ...string) (Proc, []emulator.LogEntry, error) {
	h.env.Emu.ResetStats()
	h.env.Emu.SetFaults(h.faults)
	run, err := h.env.gitasoApply(ctx, repo.URL(), dir, kp, h.opts.RunTimeout, extra...)
	h.env.Emu.SetFaults(emulator.Faults{})
	requests := h.env.Emu.RequestLog()
	h.env.Emu.ResetStats()
	return run, requests, err
}

// RunKillTrials runs one control trial per scenario (no kill; their durations calibrate the kill points) and then
// kill -9 trials cycling through the scenarios until opts.Trials kills have landed (at most 2×Trials attempts).
func RunKillTrials(ctx context.Context, env *Env, opts KillOptions) (controls, trials []Trial, err error) {
	h := newHarness(env, opts)
	for i, sc := range Scenarios {
		t := h.trial(ctx, 900+i, sc, true)
		controls = append(controls, t)
		h.progress(t)
		if ctx.Err() != nil {
			return controls, trials, ctx.Err()
		}
	}
	if h.est[ScenarioCreate] == 0 {
		return controls, trials, fmt.Errorf("reliability: the control create did not run: %s", controls[0].Error)
	}
	for _, sc := range Scenarios {
		if h.est[sc] == 0 {
			h.est[sc] = h.est[ScenarioCreate]
		}
	}
	kills := 0
	for n := 0; kills < opts.Trials && n < 2*opts.Trials; n++ {
		t := h.trial(ctx, n, Scenarios[n%len(Scenarios)], false)
		trials = append(trials, t)
		if t.Killed {
			kills++
		}
		h.progress(t)
		if ctx.Err() != nil {
			return controls, trials, ctx.Err()
		}
	}
	return controls, trials, nil
}

func (h *harness) progress(t Trial) {
	if h.opts.Progress == nil {
		return
	}
	what := "control"
	if !t.Control {
		what = "kill " + t.Kill.String() + ": "
		if t.Killed {
			what += fmt.Sprintf("killed after %d ARM writes, %d in flight", t.WritesBeforeKill, t.InFlightAtKill)
			if t.SecondKilled {
				what += ", recovery killed " + t.SecondKill.String()
			}
		} else {
			what += "finished first"
		}
	}
	status := "converged"
	switch {
	case t.Error != "":
		status = "ERROR " + t.Error
	case !t.Verdict.Converged() || len(t.Verdict.Lost) > 0:
		status = "NOT CONVERGED: " + t.Verdict.Findings()
		if len(t.Verdict.Lost) > 0 && t.Verdict.Converged() {
			status = "converged, " + t.Verdict.Findings()
		}
	}
	if t.Held {
		status += " (held by the deletion guard)"
	}
	fmt.Fprintf(h.opts.Progress, "  %-8s %-7s %s, %d recovery runs: %s\n", t.Prefix, t.Scenario, what, t.RecoveryRuns, status)
}

func (h *harness) extra(sc Scenario) []string {
	if sc == ScenarioDelete && h.opts.ApproveDeletions {
		return []string{"--approve-deletions"}
	}
	return nil
}

// trial runs one trial; control trials are not killed and calibrate the kill point of their scenario.
func (h *harness) trial(ctx context.Context, n int, sc Scenario, control bool) Trial {
	env := h.env
	prefix := fmt.Sprintf("rel-t%02d", n)
	if control {
		prefix = fmt.Sprintf("rel-c%d", n-900)
	}
	t := Trial{N: n, Scenario: sc, Prefix: prefix, Dir: filepath.Join(env.Dir, prefix), Control: control}
	rng := rand.New(rand.NewPCG(h.opts.Seed, uint64(n)))
	repo, err := NewRepo(t.Dir)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	statePath := filepath.Join(t.Dir, "gitaso.db")
	fleet := NewFleet(prefix, env.Sub)
	var baseline map[string]string
	if sc != ScenarioCreate {
		if _, err := repo.Commit(fleet.Files(), "fleet "+prefix); err != nil {
			t.Error = err.Error()
			return t
		}
		res, err := h.converge(ctx, repo, t.Dir, prefix, Expectation{Declared: fleet.Decls()}, 3, nil)
		if err != nil || !res.verdict.Converged() {
			t.Error = fmt.Sprintf("setup did not converge: %v %s %s", err, res.verdict.Findings(), lastLine(res.last.Output))
			return t
		}
		if h.est[ScenarioCreate] == 0 {
			h.est[ScenarioCreate] = res.first.Duration
		}
		inv, err := Inventory(ctx, env.Client, env.Sub, prefix)
		if err != nil {
			t.Error = err.Error()
			return t
		}
		baseline = Baseline(inv)
	}
	target := sc.target(fleet)
	if _, err := repo.Commit(target.Files(), string(sc)+" "+prefix); err != nil {
		t.Error = err.Error()
		return t
	}
	exp := Expectation{Declared: target.Decls(), Baseline: baseline}
	if !control {
		t.KillFraction = 0.95 * rng.Float64()
		if w := h.writes[sc]; (n/len(Scenarios))%2 == 1 && w > 0 {
			t.Kill.Writes = 1 + rng.Int64N(int64(w))
		} else {
			t.Kill.After = time.Duration(t.KillFraction * float64(h.est[sc]))
		}
	}
	run, requests, err := h.apply(ctx, repo, t.Dir, t.Kill, h.extra(sc)...)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	t.Duration, t.Killed, t.LastExit, t.LastOutput = run.Duration, run.Killed, run.Exit, run.Output
	t.Held = run.Held()
	switch {
	case control && !run.TimedOut:
		h.est[sc], h.writes[sc] = run.Duration, countWrites(requests)
	case !control && !run.Killed && !run.TimedOut && run.Duration < h.est[sc]:
		// The run finished before its kill and faster than the control (which a busy machine slowed down): the
		// kill points of the next trials are drawn over this shorter duration.
		h.est[sc] = run.Duration
	}
	if run.Killed {
		t.WritesBeforeKill = countWrites(requests)
		st, err := ReadState(statePath)
		if err != nil {
			t.CorruptAfterKill = err.Error()
		}
		t.InFlightAtKill = len(st.Operations)
	}
	v, err := Check(ctx, env, prefix, statePath, exp, requests)
	if err != nil {
		t.Error = err.Error()
		return t
	}
	if t.Killed && (n/len(Scenarios))%4 >= 2 && !v.Converged() && !t.Held {
		// A second kill, during the run that resumes the first one's work.
		t.SecondKill = KillPoint{After: time.Duration(0.95 * rng.Float64() * float64(h.est[sc]))}
		run, reqs, err := h.apply(ctx, repo, t.Dir, t.SecondKill, h.extra(sc)...)
		if err != nil {
			t.Error = err.Error()
			return t
		}
		requests = append(requests, reqs...)
		t.SecondKilled = run.Killed
		if st, err := ReadState(statePath); err != nil && t.CorruptAfterKill == "" {
			t.CorruptAfterKill = err.Error()
		} else if run.Killed {
			t.InFlightAtKill = max(t.InFlightAtKill, len(st.Operations))
		}
		if v, err = Check(ctx, env, prefix, statePath, exp, requests); err != nil {
			t.Error = err.Error()
			return t
		}
		t.Held = run.Held()
		t.RecoveryRuns = 1
	}
	if !v.Converged() && !t.Held {
		res, err := h.converge(ctx, repo, t.Dir, prefix, exp, h.opts.MaxRecoveryRuns, requests, h.extra(sc)...)
		if err != nil {
			t.Error = err.Error()
		}
		t.RecoveryRuns += len(res.runs)
		t.Held, v = res.held, res.verdict
		if len(res.runs) > 0 {
			t.LastExit, t.LastOutput = res.last.Exit, res.last.Output
		}
	}
	t.Verdict = v
	return t
}

type convergence struct {
	runs        []Proc
	first, last Proc
	verdict     Verdict
	held        bool
	requests    []emulator.LogEntry // of every gitaso run, the earlier ones included
}

// converge runs gitaso (no kill) until the fleet converges, gitaso holds the revision, or maxRuns runs. Requests
// are the ARM requests of earlier runs of the same revision, checked for losses together with the new ones.
func (h *harness) converge(ctx context.Context, repo *Repo, dir, prefix string, exp Expectation, maxRuns int, requests []emulator.LogEntry, extra ...string) (convergence, error) {
	c := convergence{requests: append([]emulator.LogEntry(nil), requests...)}
	for i := 0; i < maxRuns; i++ {
		run, reqs, err := h.apply(ctx, repo, dir, KillPoint{}, extra...)
		if err != nil {
			return c, err
		}
		c.requests = append(c.requests, reqs...)
		if i == 0 {
			c.first = run
		}
		c.last = run
		c.runs = append(c.runs, run)
		c.verdict, err = Check(ctx, h.env, prefix, filepath.Join(dir, "gitaso.db"), exp, c.requests)
		if err != nil {
			return c, err
		}
		if c.verdict.Converged() {
			return c, nil
		}
		if run.Held() {
			c.held = true
			return c, nil
		}
	}
	return c, nil
}

// countWrites counts the ARM writes in a request log (PUT, PATCH, DELETE).
func countWrites(log []emulator.LogEntry) int {
	n := 0
	for _, l := range log {
		if l.Type == "identity" || l.Type == "admin" {
			continue
		}
		switch l.Method {
		case http.MethodPut, http.MethodPatch, http.MethodDelete:
			n++
		}
	}
	return n
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
