package reliability

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// ErrFindings is returned by Run with Options.Strict when a check found a loss, an orphan, a duplicate, a
// corrupted state file, a non-converged trial, or a hostile input that crashed gitaso or was not refused.
var ErrFindings = errors.New("the harness found problems (see the tables)")

// Options configure Run.
type Options struct {
	Gitaso     string        // the binary under test
	Parts      string        // comma-separated: kill, soak, hostile, dataloss
	Work       string        // work directory ("" = a new temporary directory)
	Keep       bool          // keep the work directory
	Verbose    bool          // one line per trial, soak phase and case while running
	Strict     bool          // return ErrFindings when anything was found
	LROLatency time.Duration // duration of the emulator's long-running operations
	Only       int           // run only this kill trial (after the controls); -1 for all
	// ApproveDeletions passes --approve-deletions to the delete scenario's runs when gitaso has the flag (the
	// scenario stays under the deletion guard's default thresholds either way).
	ApproveDeletions bool
	Kill             KillOptions
	Soak             SoakOptions
	Hostile          HostileOptions
	// DataLoss names the dataloss cases to run (comma-separated); empty runs them all.
	DataLoss string
}

// DefaultOptions returns the defaults of `make reliability` (about 10 minutes on two cores).
func DefaultOptions() Options {
	return Options{Gitaso: "bin/gitaso", Parts: "kill,soak,hostile,dataloss", LROLatency: 300 * time.Millisecond, Only: -1, ApproveDeletions: true,
		Kill: DefaultKillOptions(), Soak: DefaultSoakOptions(), Hostile: DefaultHostileOptions()}
}

// Register adds the options' flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Gitaso, "gitaso", o.Gitaso, "gitaso binary under test (make build)")
	fs.StringVar(&o.Parts, "parts", o.Parts, "parts to run: kill, soak, hostile, dataloss (comma-separated)")
	fs.StringVar(&o.DataLoss, "dataloss", o.DataLoss, "dataloss: run only these cases (comma-separated names; default all)")
	fs.StringVar(&o.Work, "work", o.Work, "work directory (default: a new temporary directory)")
	fs.BoolVar(&o.Keep, "keep", o.Keep, "keep the work directory (repositories, state files) for inspection")
	fs.BoolVar(&o.Verbose, "v", o.Verbose, "print a line per trial, soak phase and hostile case as they finish")
	fs.BoolVar(&o.Strict, "strict", o.Strict, "exit 2 when anything was found (loss, orphan, duplicate, corruption, not converged, crash)")
	fs.DurationVar(&o.LROLatency, "lro-latency", o.LROLatency, "duration of the emulator's long-running operations")
	fs.Uint64Var(&o.Kill.Seed, "seed", o.Kill.Seed, "seed of every random choice (kill points, fault dice, generated inputs)")
	fs.IntVar(&o.Kill.Trials, "trials", o.Kill.Trials, "kill -9 trials that must land (scenarios cycle create, update, delete, move)")
	fs.IntVar(&o.Only, "only", o.Only, "run only kill trial N (reproduce a finding; the controls still run)")
	fs.BoolVar(&o.ApproveDeletions, "approve-deletions", o.ApproveDeletions, "pass --approve-deletions to the delete scenario when gitaso has the flag")
	fs.IntVar(&o.Kill.MaxRecoveryRuns, "recovery-runs", o.Kill.MaxRecoveryRuns, "gitaso runs after a kill that may converge the fleet")
	fs.DurationVar(&o.Kill.RunTimeout, "run-timeout", o.Kill.RunTimeout, "bound of one gitaso apply in the kill trials")
	fs.Float64Var(&o.Soak.FaultRate, "fault-rate", o.Soak.FaultRate, "soak: share of ARM requests answered 429, 500 or 503")
	fs.Float64Var(&o.Soak.ResetRate, "reset-rate", o.Soak.ResetRate, "soak: share of ARM requests whose connection is reset (half before, half after the request is served)")
	fs.DurationVar(&o.Soak.Duration, "soak-duration", o.Soak.Duration, "soak: start create/update/move/delete cycles until this has passed (one cycle at least)")
	fs.IntVar(&o.Soak.Fleets, "soak-fleets", o.Soak.Fleets, "soak: fleets of 11 resources per cycle")
	fs.DurationVar(&o.Hostile.Timeout, "hostile-timeout", o.Hostile.Timeout, "hostile inputs: time limit of one gitaso validate")
	fs.Func("hostile-mem", fmt.Sprintf("hostile inputs: kill gitaso validate when its RSS passes this many MiB (default %d)", o.Hostile.MemLimit>>20), func(v string) error {
		mib, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mib <= 0 {
			return fmt.Errorf("want a positive number of MiB, got %q", v)
		}
		o.Hostile.MemLimit = mib << 20
		return nil
	})
	fs.IntVar(&o.Hostile.HugeMB, "huge-mb", o.Hostile.HugeMB, "hostile inputs: size of the huge file in MiB")
	fs.IntVar(&o.Hostile.Objects, "objects", o.Hostile.Objects, "hostile inputs: objects in the many-objects file")
	fs.IntVar(&o.Hostile.Depth, "depth", o.Hostile.Depth, "hostile inputs: nesting depth of the deep file")
}

// Run runs the parts o.Parts names and prints one table per part to w.
func Run(ctx context.Context, o Options, w io.Writer) error {
	parts := map[string]bool{}
	for _, p := range strings.Split(o.Parts, ",") {
		switch p = strings.TrimSpace(p); p {
		case "kill", "soak", "hostile", "dataloss":
			parts[p] = true
		case "":
		default:
			return fmt.Errorf("reliability: unknown part %q (kill, soak, hostile, dataloss)", p)
		}
	}
	bin, err := filepath.Abs(o.Gitaso)
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("reliability: gitaso binary: %w (make build)", err)
	}
	if o.Work == "" {
		if o.Work, err = os.MkdirTemp("", "gitaso-reliability-"); err != nil {
			return err
		}
	}
	if o.Work, err = filepath.Abs(o.Work); err != nil {
		return err
	}
	if !o.Keep {
		defer os.RemoveAll(o.Work)
	}
	var progress io.Writer
	if o.Verbose {
		progress = w
	}
	o.Kill.Progress, o.Soak.Progress, o.Hostile.Progress = progress, progress, progress
	o.Hostile.Seed = o.Kill.Seed
	help, _ := exec.CommandContext(ctx, bin, "apply", "--help").CombinedOutput()
	hasApprove := strings.Contains(string(help), "--approve-deletions")
	o.Kill.ApproveDeletions = o.ApproveDeletions && hasApprove
	version, _ := exec.CommandContext(ctx, bin, "version").Output()
	fmt.Fprintf(w, "gitaso reliability harness: %s (%s), seed %d, work %s\n", bin, strings.TrimSpace(string(version)), o.Kill.Seed, o.Work)
	switch {
	case o.Kill.ApproveDeletions:
		fmt.Fprintln(w, "the delete scenario runs gitaso apply --approve-deletions")
	case !hasApprove:
		fmt.Fprintln(w, "note: gitaso apply has no --approve-deletions flag; the delete scenario runs without it")
	}
	findings := 0
	if parts["kill"] || parts["soak"] || parts["dataloss"] {
		env, err := NewEnv(EnvOptions{Dir: filepath.Join(o.Work, "env"), Gitaso: bin, LROLatency: o.LROLatency, Seed: o.Kill.Seed})
		if err != nil {
			return err
		}
		defer env.Close()
		if parts["kill"] {
			start := time.Now()
			fmt.Fprintf(w, "\n== Part 1: kill -9 trials (%d trials to land, seed %d)\n", o.Kill.Trials, o.Kill.Seed)
			var controls, trials []Trial
			if o.Only >= 0 {
				controls, trials, err = runOnly(ctx, env, o.Kill, o.Only)
			} else {
				controls, trials, err = RunKillTrials(ctx, env, o.Kill)
			}
			findings += PrintKillReport(w, controls, trials, time.Since(start))
			if err != nil {
				return err
			}
		}
		if parts["soak"] {
			start := time.Now()
			f := SoakFaults(o.Soak.FaultRate, o.Soak.ResetRate)
			fmt.Fprintf(w, "\n== Part 2: fault soak (429 %.1f %%, 500 %.1f %%, 503 %.1f %%, reset before %.1f %%, reset after serving %.1f %% of ARM requests)\n",
				100*f.Rate429, 100*f.Rate500, 100*f.Rate503, 100*f.ResetRate, 100*f.ResetAfterRate)
			phases, err := RunSoak(ctx, env, o.Soak, o.Kill)
			findings += PrintSoakReport(w, phases, o.Soak.MaxRuns, time.Since(start))
			if err != nil {
				return err
			}
		}
		if parts["dataloss"] {
			start := time.Now()
			only := map[string]bool{}
			for _, n := range strings.Split(o.DataLoss, ",") {
				if n = strings.TrimSpace(n); n != "" {
					only[n] = true
				}
			}
			fmt.Fprintf(w, "\n== Part 4: data-loss cases (issue 24's situations that once deleted or disabled live resources)\n")
			cases, err := RunDataLoss(ctx, env, filepath.Join(o.Work, "dataloss"), only, progress)
			findings += PrintDataLossReport(w, cases, time.Since(start))
			if err != nil {
				return err
			}
		}
	}
	if parts["hostile"] {
		start := time.Now()
		fmt.Fprintf(w, "\n== Part 3: hostile inputs (gitaso validate --dir; limit %s, RSS %d MiB)\n", o.Hostile.Timeout, o.Hostile.MemLimit>>20)
		if o.Hostile.Dir == "" {
			o.Hostile.Dir = filepath.Join(o.Work, "hostile")
		}
		cases, err := RunHostile(ctx, bin, o.Hostile)
		findings += PrintHostileReport(w, cases, time.Since(start))
		if err != nil {
			return err
		}
	}
	if o.Keep {
		fmt.Fprintf(w, "\nwork directory kept: %s\n", o.Work)
	}
	if o.Strict && findings > 0 {
		return fmt.Errorf("%w: %d", ErrFindings, findings)
	}
	return nil
}

// runOnly runs the controls and the single kill trial n.
func runOnly(ctx context.Context, env *Env, opts KillOptions, n int) ([]Trial, []Trial, error) {
	h := newHarness(env, opts)
	var controls []Trial
	for i, sc := range Scenarios {
		controls = append(controls, h.trial(ctx, 900+i, sc, true))
		h.progress(controls[i])
	}
	for _, sc := range Scenarios {
		if h.est[sc] == 0 {
			h.est[sc] = max(h.est[ScenarioCreate], time.Second)
		}
	}
	t := h.trial(ctx, n, Scenarios[n%len(Scenarios)], false)
	h.progress(t)
	return controls, []Trial{t}, ctx.Err()
}

// PrintKillReport prints part 1's table and its findings; it returns the number of findings.
func PrintKillReport(w io.Writer, controls, trials []Trial, elapsed time.Duration) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\ttrials\tkilled (by time/after a write)\tbefore 1st write\twith ops in flight\trecovery killed too\tconverged\trecovery runs (mean/max)\torphaned\tduplicated\tlost\tcorrupted\theld\t")
	type row struct {
		trials, killed, byTime, byWrite, beforeWrite, inFlight, doubled, converged, runs, maxRuns, orphaned, duplicated, lost, corrupted, held int
	}
	rows := map[Scenario]*row{}
	var total row
	findings := 0
	for _, t := range trials {
		r := rows[t.Scenario]
		if r == nil {
			r = &row{}
			rows[t.Scenario] = r
		}
		for _, x := range []*row{r, &total} {
			x.trials++
			if t.Killed {
				x.killed++
				if t.Kill.Writes > 0 {
					x.byWrite++
				} else {
					x.byTime++
				}
				if t.WritesBeforeKill == 0 {
					x.beforeWrite++
				}
				if t.InFlightAtKill > 0 {
					x.inFlight++
				}
				if t.SecondKilled {
					x.doubled++
				}
			}
			if t.Converged() {
				x.converged++
			}
			x.runs += t.RecoveryRuns
			x.maxRuns = max(x.maxRuns, t.RecoveryRuns)
			x.orphaned += len(t.Verdict.Orphaned)
			x.duplicated += len(t.Verdict.Duplicated)
			x.lost += len(t.Verdict.Lost)
			if t.Verdict.Corrupted != "" || t.CorruptAfterKill != "" {
				x.corrupted++
			}
			if t.Held {
				x.held++
			}
		}
	}
	line := func(name string, r row) {
		mean := 0.0
		if r.trials > 0 {
			mean = float64(r.runs) / float64(r.trials)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d (%d/%d)\t%d\t%d\t%d\t%d/%d\t%.1f/%d\t%d\t%d\t%d\t%d\t%d\t\n", name, r.trials, r.killed, r.byTime, r.byWrite, r.beforeWrite, r.inFlight, r.doubled,
			r.converged, r.trials, mean, r.maxRuns, r.orphaned, r.duplicated, r.lost, r.corrupted, r.held)
	}
	for _, sc := range Scenarios {
		if r := rows[sc]; r != nil {
			line(string(sc), *r)
		}
	}
	line("total", total)
	tw.Flush()
	fmt.Fprintf(w, "(%s; orphaned/duplicated/lost count resources, corrupted and held count trials; a kill that came after the run had finished does not count as killed)\n", elapsed.Round(time.Second))
	fmt.Fprintln(w, "controls (each scenario once without a kill; their durations calibrate the kill points):")
	for _, t := range controls {
		fmt.Fprintf(w, "  %-7s %6s  %s\n", t.Scenario, t.Duration.Round(10*time.Millisecond), trialStatus(t))
		if !t.Converged() || len(t.Verdict.Lost) > 0 {
			findings++
		}
	}
	var bad []Trial
	for _, t := range trials {
		if !t.Converged() || len(t.Verdict.Lost) > 0 || t.CorruptAfterKill != "" {
			bad = append(bad, t)
		}
	}
	findings += len(bad)
	if len(bad) > 0 {
		fmt.Fprintln(w, "findings (reproduce one trial: go run ./harness/reliability/cmd/reliability -gitaso bin/gitaso -parts kill -seed SEED -only N -keep -v):")
		for _, t := range bad {
			second := ""
			if t.SecondKilled {
				second = ", recovery killed " + t.SecondKill.String()
			}
			fmt.Fprintf(w, "  trial %d (%s, kill %s, after %d ARM writes%s): %s\n", t.N, t.Scenario, t.Kill, t.WritesBeforeKill, second, trialStatus(t))
		}
	}
	return findings
}

func trialStatus(t Trial) string {
	var parts []string
	switch {
	case t.Error != "":
		parts = append(parts, "harness error: "+t.Error)
	case t.Verdict.Converged():
		parts = append(parts, "converged")
	default:
		parts = append(parts, "not converged")
	}
	if f := t.Verdict.Findings(); f != "" {
		parts = append(parts, f)
	}
	if t.CorruptAfterKill != "" {
		parts = append(parts, "state corrupted right after the kill: "+t.CorruptAfterKill)
	}
	if t.Held {
		parts = append(parts, "held by the deletion guard")
	}
	if !t.Verdict.Converged() && t.LastOutput != "" {
		parts = append(parts, fmt.Sprintf("last gitaso exit %d: %s", t.LastExit, lastErrorLine(t.LastOutput)))
	}
	return strings.Join(parts, "; ")
}

// lastErrorLine picks the most telling line of gitaso's output: the last one mentioning an error.
func lastErrorLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.ToLower(lines[i])
		if strings.Contains(l, "error") || strings.Contains(l, "held") || strings.Contains(l, "failed") {
			return lastLine(lines[i])
		}
	}
	return lastLine(out)
}

// PrintSoakReport prints part 2's table; it returns the number of findings.
func PrintSoakReport(w io.Writer, phases []SoakPhase, maxRuns int, elapsed time.Duration) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "cycle\tphase\tresources\truns\tduration\tARM requests\tfaults (429/500/503/reset/reset-after)\tretried\tconverged\torphaned\tduplicated\tlost\t")
	findings := 0
	var total SoakPhase
	total.Faults = map[string]int{}
	for _, p := range phases {
		conv := "yes"
		if !p.Verdict.Converged() || p.Error != "" {
			conv = "NO"
			findings++
		} else if len(p.Verdict.Lost) > 0 {
			findings++
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t%d (%s)\t%d\t%s\t%d\t%d\t%d\t\n", p.Cycle, p.Phase, p.Declared, p.Runs, p.Duration.Round(100*time.Millisecond),
			p.Requests, p.FaultCount(), faultKinds(p.Faults), p.Retries, conv, len(p.Verdict.Orphaned), len(p.Verdict.Duplicated), len(p.Verdict.Lost))
		total.Runs += p.Runs
		total.Duration += p.Duration
		total.Requests += p.Requests
		total.Retries += p.Retries
		for k, v := range p.Faults {
			total.Faults[k] += v
		}
		total.Verdict.Orphaned = append(total.Verdict.Orphaned, p.Verdict.Orphaned...)
		total.Verdict.Duplicated = append(total.Verdict.Duplicated, p.Verdict.Duplicated...)
		total.Verdict.Lost = append(total.Verdict.Lost, p.Verdict.Lost...)
	}
	fmt.Fprintf(tw, "total\t\t\t%d\t%s\t%d\t%d (%s)\t%d\t\t%d\t%d\t%d\t\n", total.Runs, total.Duration.Round(100*time.Millisecond), total.Requests,
		total.FaultCount(), faultKinds(total.Faults), total.Retries, len(total.Verdict.Orphaned), len(total.Verdict.Duplicated), len(total.Verdict.Lost))
	tw.Flush()
	fmt.Fprintf(w, "(%s; each phase runs gitaso apply until Azure and state match the commit, at most %d runs; retried = faulted requests gitaso sent again)\n",
		elapsed.Round(time.Second), maxRuns)
	for _, p := range phases {
		if p.Error != "" || !p.Verdict.Converged() || len(p.Verdict.Lost) > 0 {
			fmt.Fprintf(w, "  cycle %d %s: %s %s (last gitaso exit %d)\n", p.Cycle, p.Phase, p.Error, p.Verdict.Findings(), p.LastExit)
		}
		for _, f := range p.Failed {
			fmt.Fprintf(w, "  cycle %d %s, %s\n", p.Cycle, p.Phase, f)
		}
		for _, f := range p.NotRetried {
			fmt.Fprintf(w, "  cycle %d %s, not sent again after its fault: %s\n", p.Cycle, p.Phase, f)
		}
	}
	return findings
}

func faultKinds(m map[string]int) string {
	return fmt.Sprintf("%d/%d/%d/%d/%d", m["429"], m["500"], m["503"], m["reset"], m["reset-after"])
}

// PrintHostileReport prints part 3's table; it returns the number of findings (a case whose outcome is not the
// one a robust gitaso gives).
func PrintHostileReport(w io.Writer, cases []HostileCase, elapsed time.Duration) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tinput\toutcome\twant\tmax RSS\ttime\tfirst line of output")
	findings := 0
	for _, c := range cases {
		mark := ""
		if !c.Wanted() {
			mark = " !"
			findings++
		}
		fmt.Fprintf(tw, "%s\t%s\t%s%s\t%s\t%d MiB\t%.1fs\t%s\n", c.Name, c.What, c.Outcome, mark, c.Want, c.MaxRSS>>20, c.Duration.Seconds(), c.Error)
	}
	tw.Flush()
	fmt.Fprintf(w, "(%s; \"!\" marks an outcome other than the one wanted)\n", elapsed.Round(time.Second))
	return findings
}
