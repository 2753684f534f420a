package reliability

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/gitaso/gitaso/emulator"
)

// Issue 24's data-loss case delete-resume (item 10 of its reliability probe): repeated crashes during a large delete
// made no progress. 900 user-assigned identities, each with a federated credential, are removed from Git; under
// ARM's throttling `gitaso apply` is SIGKILLed 13 s after its first ARM request, twelve times, then runs to the
// end. Every restart used to read all 900 child collections again (the unmanaged-children check reads them all
// before the first DELETE) and to spend seconds of CPU ordering 1,800 deletions: 12 kills deleted 0 identities.
// Want: the killed runs delete most of them (a restart reads only what no run recorded, and goes on deleting), and
// the run after the kills finishes.

func init() {
	registerDataLoss(DataLossSpec{
		Name: "delete-resume",
		What: "900 identities with federated credentials deleted; kill -9 13 s into each run, 12 times, ARM throttling on",
		Want: "the killed runs delete most identities; the next run finishes",
		Run: func(ctx context.Context, env *Env, dir string) DataLossCase {
			opts := DefaultDeleteResumeOptions()
			opts.Dir = dir
			res, err := RunDeleteResume(ctx, env, opts)
			if err != nil {
				return DataLossCase{Err: err}
			}
			c := DataLossCase{
				Outcome: fmt.Sprintf("%d of %d deleted by runs killed 13 s in; %s after %d runs",
					res.DeletedUnderKills, opts.Identities, map[bool]string{true: "finished", false: "NOT finished"}[res.Converged], res.Runs),
				Detail: fmt.Sprintf("%d child listings in all; %d ARM requests before the first DELETE after the first kill",
					res.Listings, res.FirstRestartBeforeDelete),
			}
			// Progress: the killed runs deleted at least half (their DELETEs alone, 200 then 10 a second, could
			// take 13 s × 12 × 10/s), and the restarts did not read again what was recorded.
			c.Held = res.Converged && res.DeletedUnderKills >= opts.Identities/2 && res.Listings < 2*opts.Identities
			return c
		},
	})
}

// DeleteResumeOptions configure RunDeleteResume.
type DeleteResumeOptions struct {
	Identities int           // user-assigned identities, each with one federated credential
	Kills      int           // SIGKILLs during the delete
	KillEvery  time.Duration // each killed run lives this long after its first ARM request
	// FinalRuns bounds the runs without a kill after the kills.
	FinalRuns  int
	RunTimeout time.Duration
	Progress   io.Writer
	Verbose    bool // print each run's output to Progress
	ExtraArgs  []string
	Dir        string // work directory (default: env.Dir/resume)
}

// DefaultDeleteResumeOptions are the probe's: 900 identities, 12 kills 13 s into each run.
func DefaultDeleteResumeOptions() DeleteResumeOptions {
	return DeleteResumeOptions{Identities: 900, Kills: 12, KillEvery: 13 * time.Second, FinalRuns: 3, RunTimeout: 10 * time.Minute}
}

// ResumeRun is one gitaso process of the delete.
type ResumeRun struct {
	Killed bool
	// BeforeDelete counts the ARM requests (tokens excluded) the run sent before its first DELETE; all of them
	// when it sent none.
	BeforeDelete int
	Listings     int // GETs of an identity's federatedIdentityCredentials collection
	Deletes      int // DELETEs answered 2xx or 404
	Requests     int
	Throttled    int
	Left         int // identities left in Azure after the run
	Duration     time.Duration
	Exit         int
}

// DeleteResumeResult is what RunDeleteResume measured.
type DeleteResumeResult struct {
	Opts DeleteResumeOptions
	Runs int
	// PerRun lists every gitaso process of the delete, the killed ones first.
	PerRun []ResumeRun
	// FirstRestartBeforeDelete is BeforeDelete of the first run after a kill.
	FirstRestartBeforeDelete int
	// DeletedUnderKills counts the identities the runs under a kill schedule deleted (the first Opts.Kills runs,
	// one of which may finish before its kill).
	DeletedUnderKills int
	Listings          int
	Left              int
	Converged         bool
	Took              time.Duration
}

func (r DeleteResumeResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "delete of %d identities with federated credentials, kill -9 every %s × %d, ARM throttling on:\n",
		r.Opts.Identities, r.Opts.KillEvery, r.Opts.Kills)
	fmt.Fprintf(&b, "  run  killed  before-1st-DELETE  child-listings  DELETEs  requests  429s  left  took\n")
	for i, run := range r.PerRun {
		fmt.Fprintf(&b, "  %3d  %-6v  %17d  %14d  %7d  %8d  %4d  %4d  %s\n", i+1, run.Killed, run.BeforeDelete, run.Listings,
			run.Deletes, run.Requests, run.Throttled, run.Left, run.Duration.Round(100*time.Millisecond))
	}
	killed := 0
	for _, run := range r.PerRun {
		if run.Killed {
			killed++
		}
	}
	fmt.Fprintf(&b, "  identities deleted by the runs under a kill schedule (%d killed): %d of %d; child listings in all: %d; converged: %v after %d runs (%s)\n",
		killed, r.DeletedUnderKills, r.Opts.Identities, r.Listings, r.Converged, r.Runs, r.Took.Round(time.Second))
	return b.String()
}

const resumeGroup = "rel-resume"

// resumeFiles renders a resource group and, unless empty, n identities with a federated credential each.
func resumeFiles(n int) map[string]string {
	var b strings.Builder
	b.WriteString(`apiVersion: resources.azure.com/v1api20200601
kind: ResourceGroup
metadata:
  name: ` + resumeGroup + `
  namespace: resume
spec:
  location: westeurope
`)
	files := map[string]string{RepoPath + "/resume/group.yaml": b.String()}
	if n == 0 {
		return files
	}
	b.Reset()
	for i := range n {
		fmt.Fprintf(&b, `---
apiVersion: managedidentity.azure.com/v1api20230131
kind: UserAssignedIdentity
metadata:
  name: id-%04d
  namespace: resume
spec:
  location: westeurope
  owner:
    name: %s
---
apiVersion: managedidentity.azure.com/v1api20230131
kind: FederatedIdentityCredential
metadata:
  name: id-%04d-fic
  namespace: resume
spec:
  owner:
    name: id-%04d
  audiences: ["api://AzureADTokenExchange"]
  issuer: "https://oidc.example.com/cluster"
  subject: "system:serviceaccount:team:sa-%04d"
`, i, resumeGroup, i, i, i)
	}
	files[RepoPath+"/resume/identities.yaml"] = b.String()
	return files
}

// RunDeleteResume creates the identities (throttling off), commits their removal, then turns ARM's throttling on
// and runs `gitaso apply` opts.Kills times, each SIGKILLed after opts.KillEvery, and then without a kill until the
// identities are gone.
func RunDeleteResume(ctx context.Context, env *Env, opts DeleteResumeOptions) (DeleteResumeResult, error) {
	res := DeleteResumeResult{Opts: opts}
	dir := opts.Dir
	if dir == "" {
		dir = filepath.Join(env.Dir, "resume")
	}
	repo, err := NewRepo(dir)
	if err != nil {
		return res, err
	}
	if _, err := repo.Commit(resumeFiles(opts.Identities), "identities"); err != nil {
		return res, err
	}
	env.Emu.SetThrottleScale(0)
	setup, err := env.gitasoApply(ctx, repo.URL(), dir, KillPoint{}, opts.RunTimeout)
	if err != nil {
		return res, err
	}
	left, err := resumeIdentities(ctx, env)
	if err != nil {
		return res, err
	}
	if setup.Exit != 0 || left != opts.Identities {
		return res, fmt.Errorf("reliability: creating %d identities: exit %d, %d exist: %s", opts.Identities, setup.Exit, left, lastLine(setup.Output))
	}
	if _, err := repo.Commit(resumeFiles(0), "delete the identities"); err != nil {
		return res, err
	}
	env.Emu.SetThrottleScale(1)
	defer env.Emu.SetThrottleScale(0)
	// The guard would hold 1,800 deletions: lift it, so that the unmanaged-children check runs (approving would
	// skip it).
	extra := append([]string{"--max-deletions", "0", "--max-deletion-fraction", "0"}, opts.ExtraArgs...)
	start := time.Now()
	for i := 0; i < opts.Kills+opts.FinalRuns && left > 0; i++ {
		kp := KillPoint{}
		if i < opts.Kills {
			kp.AfterARM = opts.KillEvery
		}
		env.Emu.ResetStats()
		p, err := env.gitasoApply(ctx, repo.URL(), dir, kp, opts.RunTimeout, extra...)
		if err != nil {
			return res, err
		}
		reqs := env.Emu.RequestLog()
		run := resumeRequests(reqs)
		if opts.Verbose && opts.Progress != nil {
			for _, l := range reqs[:min(len(reqs), 6)] {
				fmt.Fprintf(opts.Progress, "  %s %s %s %d %s\n", l.Time.Format(time.StampMilli), l.Method, l.Path, l.Status, l.Duration)
			}
			byOp := map[string]int{}
			for _, l := range reqs {
				byOp[fmt.Sprintf("%s %s %d", l.Method, l.Type, l.Status)]++
			}
			fmt.Fprintln(opts.Progress, byOp)
		}
		env.Emu.ResetStats()
		run.Killed, run.Duration, run.Exit = p.Killed, p.Duration, p.Exit
		before := left
		if left, err = resumeIdentities(ctx, env); err != nil {
			return res, err
		}
		run.Left = left
		if i < opts.Kills {
			res.DeletedUnderKills += before - left
		}
		if i > 0 && res.PerRun[i-1].Killed && res.FirstRestartBeforeDelete == 0 {
			res.FirstRestartBeforeDelete = run.BeforeDelete
		}
		res.Listings += run.Listings
		res.PerRun = append(res.PerRun, run)
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "run %d: killed %v, %d requests before the first DELETE, %d listings, %d DELETEs, %d identities left\n",
				i+1, run.Killed, run.BeforeDelete, run.Listings, run.Deletes, left)
			if opts.Verbose {
				fmt.Fprintln(opts.Progress, p.Output)
			}
		}
		if !p.Killed && p.Exit != 0 && left > 0 {
			return res, fmt.Errorf("reliability: run %d exited %d: %s", i+1, p.Exit, lastLine(p.Output))
		}
	}
	res.Took, res.Runs, res.Left, res.Converged = time.Since(start), len(res.PerRun), left, left == 0
	return res, nil
}

// resumeRequests counts a run's ARM requests.
func resumeRequests(log []emulator.LogEntry) ResumeRun {
	var r ResumeRun
	deleted := false
	for _, l := range log {
		if l.Type == "identity" || l.Type == "admin" {
			continue
		}
		r.Requests++
		if l.Status == http.StatusTooManyRequests {
			r.Throttled++
		}
		switch {
		case l.Method == http.MethodDelete:
			if !deleted {
				deleted = true
				r.BeforeDelete = r.Requests - 1
			}
			if l.Status < 300 || l.Status == http.StatusNotFound {
				r.Deletes++
			}
		case l.Method == http.MethodGet && strings.HasSuffix(strings.ToLower(l.Path), "/federatedidentitycredentials"):
			r.Listings++
		}
	}
	if !deleted {
		r.BeforeDelete = r.Requests
	}
	return r
}

// resumeIdentities counts the identities left in the resource group.
func resumeIdentities(ctx context.Context, env *Env) (int, error) {
	n := 0
	for _, r := range env.Emu.Resources() {
		if strings.EqualFold(r.Type, "Microsoft.ManagedIdentity/userAssignedIdentities") &&
			strings.Contains(strings.ToLower(r.ID), "/resourcegroups/"+resumeGroup+"/") {
			n++
		}
	}
	return n, nil
}
