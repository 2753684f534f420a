package reliability

import (
	"context"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// SoakOptions configure the fault soak.
type SoakOptions struct {
	// FaultRate is the share of ARM requests answered 429, 500 or 503 (35 %, 35 % and 30 % of it).
	FaultRate float64
	// ResetRate is the share of ARM requests whose connection is reset: half before the request is served, half
	// after it was served (the write took effect, the answer is lost).
	ResetRate float64
	// Duration: create/update/move/delete cycles start until it has passed (at least one cycle runs).
	Duration time.Duration
	// Fleets per cycle (11 resources each, 7 after the delete).
	Fleets int
	// MaxRuns bounds the gitaso runs of one phase.
	MaxRuns    int
	RunTimeout time.Duration
	Progress   io.Writer
}

// DefaultSoakOptions returns the defaults of `make reliability`.
func DefaultSoakOptions() SoakOptions {
	return SoakOptions{FaultRate: 0.2, ResetRate: 0.05, Duration: 2 * time.Minute, Fleets: 2, MaxRuns: 8, RunTimeout: 3 * time.Minute}
}

// SoakFaults splits the rates over the fault kinds of the soak.
func SoakFaults(rate, reset float64) emulator.Faults {
	return emulator.Faults{Rate429: 0.35 * rate, Rate500: 0.35 * rate, Rate503: 0.3 * rate, ResetRate: reset / 2, ResetAfterRate: reset / 2}
}

// SoakPhase is one phase (create, update, move or delete) of a soak cycle, run until converged.
type SoakPhase struct {
	Cycle    int
	Phase    Scenario
	Declared int // resources the phase's commit declares
	Runs     int
	Duration time.Duration // of the gitaso runs
	Requests int           // ARM requests gitaso sent (token requests not counted)
	Faults   map[string]int
	// Retries counts the faulted requests that gitaso sent again (same method and path later in the phase).
	Retries  int
	Held     bool
	LastExit int
	// NotRetried lists the faulted requests gitaso did not send again ("METHOD path (fault)").
	NotRetried []string
	// Failed lists the runs that exited non-zero: "run N exit C: the last error line gitaso printed".
	Failed  []string
	Verdict Verdict
	Error   string
}

// FaultCount is the number of injected faults of the phase.
func (p SoakPhase) FaultCount() int {
	n := 0
	for _, c := range p.Faults {
		n += c
	}
	return n
}

// RunSoak runs create → update → move → delete cycles of opts.Fleets fleets with faults injected into gitaso's ARM
// requests, each phase until it converges.
func RunSoak(ctx context.Context, env *Env, opts SoakOptions, kill KillOptions) ([]SoakPhase, error) {
	kill.RunTimeout = opts.RunTimeout
	h := newHarness(env, kill)
	h.faults = SoakFaults(opts.FaultRate, opts.ResetRate)
	start := time.Now()
	var out []SoakPhase
	for cycle := 1; cycle == 1 || time.Since(start) < opts.Duration; cycle++ {
		prefix := fmt.Sprintf("rel-s%02d", cycle)
		dir := filepath.Join(env.Dir, prefix)
		repo, err := NewRepo(dir)
		if err != nil {
			return out, err
		}
		fleets := make([]Fleet, opts.Fleets)
		for i := range fleets {
			fleets[i] = NewFleet(fmt.Sprintf("%s%c", prefix, 'a'+i), env.Sub)
		}
		var baseline map[string]string
		for _, phase := range []Scenario{ScenarioCreate, ScenarioUpdate, ScenarioMove, ScenarioDelete} {
			files := map[string]string{}
			var decls []Decl
			for i := range fleets {
				if phase != ScenarioCreate {
					fleets[i] = phase.target(fleets[i])
				}
				maps.Copy(files, fleets[i].Files())
				decls = append(decls, fleets[i].Decls()...)
			}
			p := SoakPhase{Cycle: cycle, Phase: phase, Declared: len(decls)}
			if _, err := repo.Commit(files, fmt.Sprintf("%s %s", phase, prefix)); err != nil {
				return out, err
			}
			res, err := h.converge(ctx, repo, dir, prefix, Expectation{Declared: decls, Baseline: baseline}, opts.MaxRuns, nil, h.extra(phase)...)
			if err != nil {
				p.Error = err.Error()
			}
			p.Runs, p.Held, p.Verdict = len(res.runs), res.held, res.verdict
			for i, r := range res.runs {
				p.Duration += r.Duration
				if r.Exit != 0 {
					p.Failed = append(p.Failed, fmt.Sprintf("run %d exit %d: %s", i+1, r.Exit, lastErrorLine(r.Output)))
				}
			}
			if len(res.runs) > 0 {
				p.LastExit = res.last.Exit
			}
			p.Requests, p.Faults, p.Retries, p.NotRetried = faultStats(res.requests)
			out = append(out, p)
			if opts.Progress != nil {
				status := "converged"
				if !p.Verdict.Converged() || len(p.Verdict.Lost) > 0 {
					status = p.Verdict.Findings()
				}
				fmt.Fprintf(opts.Progress, "  soak cycle %d %-6s %d runs, %s, %d requests, %d faults, %d retried: %s\n",
					cycle, phase, p.Runs, p.Duration.Round(time.Millisecond), p.Requests, p.FaultCount(), p.Retries, status)
			}
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			if p.Error != "" || !p.Verdict.Converged() {
				return out, nil // the next phase would start from a state the harness cannot describe
			}
			inv, err := Inventory(ctx, env.Client, env.Sub, prefix)
			if err != nil {
				return out, err
			}
			baseline = Baseline(inv)
		}
	}
	return out, nil
}

// faultStats counts the ARM requests of a request log, its injected faults by kind, and the faulted requests
// that were sent again later.
func faultStats(log []emulator.LogEntry) (requests int, faults map[string]int, retries int, notRetried []string) {
	faults = map[string]int{}
	for i, l := range log {
		if l.Type == "identity" || l.Type == "admin" {
			continue
		}
		requests++
		if l.Fault == "" {
			continue
		}
		faults[l.Fault]++
		again := false
		for _, later := range log[i+1:] {
			if later.Method == l.Method && later.Path == l.Path {
				again = true
				break
			}
		}
		if again {
			retries++
		} else {
			notRetried = append(notRetried, fmt.Sprintf("%s %s (%s)", l.Method, shorten([]string{l.Path}, 1)[0], l.Fault))
		}
	}
	return requests, faults, retries, notRetried
}
