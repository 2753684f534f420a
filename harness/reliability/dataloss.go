package reliability

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"text/tabwriter"
	"time"
)

// The dataloss part (Part 4) replays the situations in which gitaso once deleted or disabled live resources that
// its user still wanted (issue 24: a directory symlink leaving the root, a manifest turned into a symlink in Git,
// a resource group deleted with unmanaged role assignments at its scope, a role assignment moved to another
// namespace, repeated crashes during a large delete). Each case drives a real gitaso binary against the
// harness's emulator and says whether what it guards against happened.
//
// A case lives in a file of its own (dataloss_<topic>.go) and registers itself from an init function:
//
//	func init() {
//		registerDataLoss(DataLossSpec{
//			Name: "dir-symlink-out",
//			What: "--dir: infra/team becomes a symlink to a directory outside the root",
//			Want: "revision refused naming the entry; nothing deleted",
//			Run: func(ctx context.Context, env *Env, dir string) DataLossCase {
//				// set up in dir, run env.Gitaso (env.gitasoApply, NewRepo, Inventory …), then compare:
//				return DataLossCase{Outcome: "refused, 0 deleted", Held: true}
//			},
//		})
//	}
//
// Run gets the shared emulator and a directory of its own. It fills Outcome (what happened, in a few words), Held
// (what the case guards against did not happen: the user's resources are intact) and, when it could not run at
// all, Err. Figures worth a column (requests, seconds) go in Detail.

// DataLossSpec is one registered case.
type DataLossSpec struct {
	Name string // short, unique, kebab-case
	What string // the situation
	Want string // what must happen
	Run  func(ctx context.Context, env *Env, dir string) DataLossCase
}

// DataLossCase is one case's result.
type DataLossCase struct {
	Name, What, Want string
	Outcome          string // what happened
	Held             bool   // nothing the user wanted was lost
	Detail           string // figures, optional
	Err              error  // the case could not run
	Duration         time.Duration
}

var (
	dataLossMu    sync.Mutex
	dataLossSpecs []DataLossSpec
)

// registerDataLoss adds a case; call it from an init function.
func registerDataLoss(s DataLossSpec) {
	dataLossMu.Lock()
	defer dataLossMu.Unlock()
	for _, o := range dataLossSpecs {
		if o.Name == s.Name {
			panic("reliability: dataloss case registered twice: " + s.Name)
		}
	}
	dataLossSpecs = append(dataLossSpecs, s)
}

// DataLossSpecs returns the registered cases by name.
func DataLossSpecs() []DataLossSpec {
	dataLossMu.Lock()
	defer dataLossMu.Unlock()
	out := append([]DataLossSpec(nil), dataLossSpecs...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// RunDataLoss runs every registered case (or those named in only, when not empty) one after the other, each in a
// directory of its own under dir.
func RunDataLoss(ctx context.Context, env *Env, dir string, only map[string]bool, progress io.Writer) ([]DataLossCase, error) {
	var out []DataLossCase
	for _, s := range DataLossSpecs() {
		if len(only) > 0 && !only[s.Name] {
			continue
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		cdir := filepath.Join(dir, s.Name)
		if err := os.MkdirAll(cdir, 0o755); err != nil {
			return out, fmt.Errorf("reliability: dataloss %s: %w", s.Name, err)
		}
		start := time.Now()
		c := s.Run(ctx, env, cdir)
		c.Name, c.What, c.Want, c.Duration = s.Name, s.What, s.Want, time.Since(start)
		if progress != nil {
			fmt.Fprintf(progress, "dataloss %s: %s (held %v, %s)\n", c.Name, c.Outcome, c.Held, c.Duration.Round(time.Millisecond))
		}
		out = append(out, c)
	}
	return out, nil
}

// PrintDataLossReport prints part 4's table; it returns the number of findings (a case not held, or one that could
// not run).
func PrintDataLossReport(w io.Writer, cases []DataLossCase, elapsed time.Duration) int {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "case\tsituation\toutcome\twant\tdetail\ttime")
	findings := 0
	for _, c := range cases {
		outcome := c.Outcome
		switch {
		case c.Err != nil:
			outcome, findings = "error: "+firstLine(c.Err.Error())+" !", findings+1
		case !c.Held:
			outcome, findings = outcome+" !", findings+1
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%.1fs\n", c.Name, c.What, outcome, c.Want, c.Detail, c.Duration.Seconds())
	}
	tw.Flush()
	fmt.Fprintf(w, "(%d cases, %s; \"!\" marks a case where the user's resources were not kept)\n", len(cases), elapsed.Round(time.Second))
	return findings
}
