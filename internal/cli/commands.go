package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/emulator"
	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/web"
)

func validateCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{}
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Parse the manifests, build the dependency graph and report every error (no Azure calls)",
		Long: `validate reads every *.yaml/*.yml below the path, checks each ASO object against the catalog of
ASO kinds (group, version, kind, field names and casing, enums, required fields, references, owners,
credentials) and builds the dependency graph. All errors are reported together, each naming the file,
line, object and field. Exit code 1 when there is any error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := s.setup(cmd, stderr, true, false)
			if err != nil {
				return err
			}
			r := reconcile.New(e.src, nil, nil, e.cfg, e.log)
			snap, g, err := r.Build(cmd.Context())
			// A Flux Kustomization or HelmRelease that did not render is
			// an error here, reported with the others.
			var units diag.List
			if snap != nil {
				units = source.UnitErrors(snap.Units)
			}
			if err != nil {
				if l := diag.AsList(err); len(l) > 0 && len(units) > 0 {
					err = append(units, l...)
				}
				return reportInputErrors(stderr, err, "")
			}
			if len(units) > 0 {
				return reportInputErrors(stderr, units, "")
			}
			for _, o := range g.Ignored() {
				fmt.Fprintf(stderr, "%s:%d: %s: ignored: %s is not an ASO kind, ConfigMap or Secret\n", o.File, o.Line, o.ID(), o.APIVersion())
			}
			later := ""
			if len(g.Deferred) > 0 {
				// Their variables come from a source a resource exports once
				// applied: checked in full when gitaso plans them.
				later = fmt.Sprintf("; %d known after apply (checked once the values they wait for are exported)", len(g.Deferred))
			}
			_, err = fmt.Fprintf(stdout, "%d resources valid at revision %s%s\n", len(g.Nodes), snap.Revision, later)
			return err
		},
	}
	s.register(cmd.Flags(), false)
	return cmd
}

// reportInputErrors prints every input error, one per line, and returns
// the count (with outcome, what the command did not do, when not "").
func reportInputErrors(stderr io.Writer, err error, outcome string) error {
	if l := diag.AsList(err); len(l) > 0 {
		for _, e := range l.Sorted() {
			fmt.Fprintln(stderr, e.Error())
		}
		word := "errors"
		if len(l) == 1 {
			word = "error"
		}
		if outcome != "" {
			word += "; " + outcome
		}
		return &ExitError{Code: 1, Err: fmt.Errorf("%d %s", len(l), word)}
	}
	return err
}

func planCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{}
	var output, outFile string
	var offline, refresh bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what applying the branch would change in Azure (exit code 2 when changes are pending)",
		Long: `plan converts every manifest into the ARM request ASO would send and compares it with what gitaso
last applied (the state file) and, with --refresh (the default), with what Azure holds now.

  --output text   reads like terraform plan, with ASO names and ARM IDs
  --output json   the documented JSON interface: {"revision", "resources": [{"namespace", "kind", "name",
                  "action", "armId", "request": {"method", "path", "body"}, "changes": [...]}]}
  --output markdown  a summary table and the full plan, for a pull-request comment
  --offline       no Azure and no state at all: everything is a create (needs --subscription or
                  AZURE_SUBSCRIPTION_ID; defaults to the zero subscription), for air-gapped review and CI

  --out FILE      also save the plan: 'gitaso apply FILE' applies exactly it, and refuses (exit code 4)
                  when it is stale: the branch moved, the state changed, or Azure no longer matches
                  what the plan read. The file holds no secret value.

Values that exist only once another resource is applied (an identity's principalId feeding a
RoleAssignment's principalIdFromConfig) show as "(known after apply)". Secret values are never shown.
Exit codes: 0 no changes, 2 changes pending, 1 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			s.reach = refresh && !offline
			e, err := s.setup(cmd, stderr, offline, !offline)
			if err != nil {
				return err
			}
			defer e.close()
			if s.stateCreated {
				// A plan only reads: it leaves no state file it made behind
				// (an absent state plans as an empty one, and a saved plan
				// made so applies against a new one).
				defer func() {
					e.close()
					_ = os.Remove(s.stateFile)
				}()
			}
			r := reconcile.New(e.src, e.db, e.clients, e.cfg, e.log)
			rep, err := r.PlanOnly(cmd.Context(), refresh && !offline)
			if err != nil {
				return reportInputErrors(stderr, err, "no plan")
			}
			if outFile != "" {
				if s.beside.enabled {
					return errors.New("--out: a plan beside ASO is ASO's to apply, not gitaso's")
				}
				if offline {
					return errors.New("--out: an offline plan cannot be applied; plan with Azure and the state")
				}
				if err := savePlan(r, rep, refresh, outFile, cmd.Flags()); err != nil {
					return err
				}
			}
			switch output {
			case "json":
				err = planner.RenderJSON(stdout, rep.Plan)
			case "text":
				err = planner.RenderText(stdout, rep.Plan, planner.TextOptions{})
			case "markdown":
				err = planner.RenderMarkdown(stdout, rep.Plan)
			default:
				return fmt.Errorf("--output %q: want text, json or markdown", output)
			}
			if err != nil {
				return err
			}
			if err := partialUnits(rep.Plan); err != nil {
				return err
			}
			if rep.Plan.HasChanges() {
				return &ExitError{Code: 2}
			}
			return nil
		},
	}
	s.register(cmd.Flags(), true)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "text, json, or markdown (a pull-request comment)")
	cmd.Flags().BoolVar(&offline, "offline", false, "plan without Azure or state: everything is a create")
	cmd.Flags().StringVar(&outFile, "out", "", "save the plan to `FILE` for 'gitaso apply FILE' (mode 0600; no secret values)")
	cmd.Flags().BoolVar(&refresh, "refresh", true, "read Azure to find drift and resources to adopt")
	s.beside.register(cmd.Flags()) // beside.go
	return cmd
}

func applyCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{persistCharts: true}
	var refresh, approveDeletions, autoApprove bool
	cmd := &cobra.Command{
		Use:   "apply [SAVED-PLAN]",
		Short: "Plan and apply the branch once, or apply a plan saved by 'gitaso plan --out'",
		Long: `apply plans like 'gitaso plan' and applies the plan: PUTs in dependency order with bounded parallelism,
then deletions of what was removed from Git, children first. Results, exports and the run are recorded in
the state file. A revision with any input error is refused whole. Exit code 1 when anything failed, 3 when
the deletion guard held the revision (nothing applied; --approve-deletions releases it).

With SAVED-PLAN (a file of 'gitaso plan --out'), apply applies exactly that plan and nothing else: it
checks that the branch is still at the plan's revision and the state unchanged, plans again (reading
Azure when the saved plan did) and refuses with exit code 4, applying nothing, unless that plan is the
saved one. The saved plan carries the flags 'gitaso plan' was given (repository, branch, path, state,
rendering; relative paths made absolute; no value of a flag named for a secret), and apply takes those it
is not given, saying which: 'gitaso apply FILE' alone applies it. Objects the saved plan
showed as known after apply are then applied as a plain apply applies them, once their values exist
(Terraform's rule: the reviewed plan listed them): that phase refuses, with exit code 1, to change any
other resource. Exit code 0 means the whole saved plan was applied, those objects included.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var printedPlan *planner.Plan
			var sp *reconcile.SavedPlan
			if len(args) == 1 {
				var err error
				if sp, err = readSavedPlan(args[0]); err != nil {
					return err
				}
				// The plan names its source and settings: flags not given
				// here are taken from it.
				if err := restoreSavedFlags(cmd.Flags(), sp.Flags, stderr); err != nil {
					return err
				}
			}
			s.reach = true
			e, err := s.setup(cmd, stderr, false, true)
			if err != nil {
				return err
			}
			defer e.close()
			r := reconcile.New(e.src, e.db, e.clients, e.cfg, e.log)
			var first *reconcile.Report
			if sp != nil {
				first, err = r.ApplySaved(cmd.Context(), sp, approveDeletions)
				if errors.Is(err, reconcile.ErrStalePlan) {
					return &ExitError{Code: 4, Err: err}
				}
			} else if !autoApprove && stdinIsTerminal() {
				// On a terminal, deletions are confirmed first (Terraform's
				// rule): show the plan, ask, then apply exactly it.
				var shown bool
				first, shown, err = confirmThenApply(cmd.Context(), r, refresh, approveDeletions, stdout)
				if shown && first != nil {
					printedPlan = first.Plan
				}
				if errors.Is(err, errDeclined) {
					return &ExitError{Code: 1, Err: err}
				}
				if errors.Is(err, reconcile.ErrStalePlan) {
					return &ExitError{Code: 4, Err: fmt.Errorf("%w (plan and confirm again)", err)}
				}
			} else {
				first, err = r.Once(cmd.Context(), reconcile.Options{Trigger: "cli", Refresh: refresh, ApproveDeletions: approveDeletions})
			}
			// A run applies in phases when objects were known after apply.
			var last *reconcile.Report
			for rep := first; rep != nil; rep = rep.Then {
				if rep != first {
					fmt.Fprintf(stdout, "\nApplying what was known after apply, now that its values exist:\n\n")
				}
				if rep.Plan != nil && !(rep == first && printedPlan != nil) {
					if perr := planner.RenderText(stdout, rep.Plan, planner.TextOptions{}); perr != nil {
						return perr
					}
				}
				if rep.Result != nil {
					printResult(stdout, rep.Result)
				}
				last = rep
			}
			if errors.Is(err, reconcile.ErrBeyondSavedPlan) {
				return &ExitError{Code: 1, Err: err}
			}
			if err != nil {
				return reportInputErrors(stderr, err, "nothing was applied")
			}
			for rep := first; rep != nil; rep = rep.Then {
				if rep.Run.Outcome == record.OutcomeHeld {
					return &ExitError{Code: 3, Err: fmt.Errorf("revision held, nothing applied: %s (run again with --approve-deletions to delete exactly these resources)", rep.Run.Held.Message)}
				}
				if rep.Result != nil && rep.Result.Failed() {
					return &ExitError{Code: 1, Err: errors.New(rep.Run.Error)}
				}
			}
			if last != nil && last.Graph != nil && len(last.Graph.Deferred) > 0 {
				return &ExitError{Code: 1, Err: fmt.Errorf("%d objects are still known after apply: their values were not exported (see the plan above)", len(last.Graph.Deferred))}
			}
			if last != nil && last.Plan != nil {
				return partialUnits(last.Plan)
			}
			return nil
		},
	}
	s.register(cmd.Flags(), true)
	cmd.Flags().BoolVar(&refresh, "refresh", true, "read Azure first to find drift and resources to adopt")
	cmd.Flags().BoolVar(&autoApprove, "auto-approve", false, "do not ask before deleting when run on a terminal (scripts and CI never are asked)")
	cmd.Flags().BoolVar(&approveDeletions, "approve-deletions", false, "apply a revision the deletion guard would hold (more deletions than --max-deletions/--max-deletion-fraction, an empty revision, a parent holding resources gitaso does not manage)")
	return cmd
}

// savePlan writes a dry run's plan for 'gitaso apply FILE', readable by
// its owner only.
func savePlan(r *reconcile.Reconciler, rep *reconcile.Report, refreshed bool, file string, fs *pflag.FlagSet) error {
	sp, err := r.SavePlan(rep, refreshed, Version)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	sp.Flags = savedFlags(fs)
	tmp := file + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	if _, err := sp.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("--out %s: %w", file, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--out %s: %w", file, err)
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

func readSavedPlan(file string) (*reconcile.SavedPlan, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("saved plan: %w", err)
	}
	defer f.Close()
	sp, err := reconcile.ReadSavedPlan(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return sp, nil
}

func printResult(w io.Writer, res *executor.Result) {
	fmt.Fprintf(w, "\nApply finished in %s:\n", res.Finished.Sub(res.Started).Round(time.Millisecond))
	for _, rr := range res.Resources {
		if rr == nil || rr.Outcome == executor.Unchanged {
			continue
		}
		line := fmt.Sprintf("  %-9s %s", rr.Outcome, rr.Resource.ID())
		if rr.Ready.Status == "False" {
			line += fmt.Sprintf(" [%s %s] %s", rr.Ready.Severity, rr.Ready.Reason, rr.Ready.Message)
		}
		fmt.Fprintln(w, line)
	}
	c := res.Counts()
	adopted := ""
	if n := c[string(executor.Adopted)]; n > 0 {
		adopted = fmt.Sprintf("%d adopted without a write (state rebuilt), ", n)
	}
	fmt.Fprintf(w, "%d applied, %s%d unchanged, %d deleted, %d detached, %d observed, %d failed, %d skipped.\n",
		c["applied"], adopted, c["unchanged"], c["deleted"], c["detached"], c["observed"], c["failed"], c["skipped"])
}

func serveCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &settings{persistCharts: true}
	ha := &haSettings{} // --leader-elect, --shards (ha.go)
	var listen, tokenFile, webhookSecretFile, pprofListen string
	var interval, syncPeriod, unreadyAfter time.Duration
	var fullResyncEvery int
	var nsPeriods, kindPeriods, allowedHosts []string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the daemon: follow the branch, apply every new revision, refresh from Azure, serve status",
		Long: `serve polls the branch every --interval and applies every new revision; every --sync-period it also
reads Azure back and corrects drift (ASO's AZURE_SYNC_PERIOD): what each subscription's Activity Log shows
written since the last read, and everything once every --full-resync-every periods (daily). It serves:

  GET  /api/v1/resources[?namespace=&kind=&ready=]   per-resource status (ASO's Ready condition)
  GET  /api/v1/resources/{namespace}/{kind}/{name}
  GET  /api/v1/runs                                  run history with revisions
  GET  /api/v1/plan                                  the latest plan (JSON interface)
  GET  /api/v1/status                                readiness, the source's fetches, the state's writes
  POST /api/v1/sync                                  reconcile now (with a refresh)
  POST /api/v1/approve {"revision":"<sha>"}          release the deletions the deletion guard held for a revision
  POST /api/v1/webhook                               a Git host's push notification (--webhook-secret-file)
  GET  /healthz  /readyz  /metrics

POST /api/v1/sync and /api/v1/approve need Content-Type: application/json, refuse cross-site requests
(Origin, Sec-Fetch-Site) and take the --api-token-file token as "Authorization: Bearer <token>".
Every endpoint but /healthz and the webhook answers only a Host naming loopback, localhost, the --listen
address or one of --api-allowed-hosts (DNS rebinding). Listening beyond loopback requires --api-token-file.
Triggers coalesce: a sync starts no sooner than 2 s after the previous run.

With --leader-elect, several replicas share one state file (a ReadWriteMany volume) and elect a leader
with a coordination.k8s.io Lease: the leader applies; standbys do not open the state, answer /healthz,
/readyz and /metrics themselves and forward every other request to the leader (X-Gitaso-Leader names
it); when the leader dies a standby takes over within --lease-duration and resumes the operations it
left in flight. --shards N --shard K split the namespaces between processes, each with its own Lease
and --state. See docs/ha.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Flags from the environment and --config too.
			if err := applyEnvAndConfig(cmd.Flags()); err != nil {
				return err
			}
			if err := ha.validate(); err != nil {
				return err
			}
			if err := s.checkBeside(ha.leaderElect); err != nil { // beside.go
				return err
			}
			// With --leader-elect only the leader opens the state (ha.go).
			e, err := s.build(stderr, false, !ha.leaderElect)
			if err != nil {
				return err
			}
			e.src = ha.filter(e.src) // --shards: this shard's namespaces only
			// The API's settings are checked before the loop or the listener start.
			apiOpts := api.Options{ListenAddr: listen, AllowedHosts: allowedHosts, UI: web.Handler()}
			if tokenFile != "" {
				token, err := readTrim(tokenFile)
				if err != nil {
					return fmt.Errorf("read --api-token-file: %w", err)
				}
				if token == "" {
					return fmt.Errorf("--api-token-file %s is empty", tokenFile)
				}
				apiOpts.Token = token
			}
			if webhookSecretFile != "" {
				secret, err := readTrim(webhookSecretFile)
				if err != nil {
					return fmt.Errorf("read --webhook-secret-file: %w", err)
				}
				apiOpts.WebhookSecret = secret
			}
			if err := apiOpts.Validate(); err != nil {
				return err
			}
			e.cfg.Interval, e.cfg.SyncPeriod, e.cfg.UnreadyAfter = interval, syncPeriod, unreadyAfter
			if fullResyncEvery < 0 {
				return fmt.Errorf("--full-resync-every %d: want 0 (once a day) or a number of sync periods", fullResyncEvery)
			}
			e.cfg.FullResyncEvery = fullResyncEvery
			if e.cfg.NamespaceSyncPeriod, err = durationMap("--namespace-sync-period", nsPeriods); err != nil {
				return err
			}
			if e.cfg.KindSyncPeriod, err = durationMap("--kind-sync-period", kindPeriods); err != nil {
				return err
			}
			setDaemonGC(e.log)
			if pprofListen != "" {
				if err := startPprof(cmd.Context(), pprofListen, e.log); err != nil {
					return err
				}
			}
			if ha.leaderElect {
				return s.serveHA(cmd.Context(), stdout, e, ha, apiOpts, listen)
			}
			defer e.close()
			if err := ha.checkState(e.db); err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", listen, err)
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			r, handler, err := s.startReconciler(ctx, e, apiOpts) // ha.go
			if err != nil {
				_ = ln.Close()
				return err
			}
			so := api.DefaultServerOptions()
			so.Logger = e.log
			srv := api.NewServer(handler, so)
			e.log.Info("serving", "address", "http://"+ln.Addr().String(), "state", s.stateFile)
			fmt.Fprintf(stdout, "gitaso serving on http://%s (status page /, API /api/v1/resources)\n", ln.Addr())
			errc := make(chan error, 1)
			go func() { errc <- srv.Serve(ln) }()
			loopErr := make(chan error, 1)
			go func() { loopErr <- r.Loop(ctx) }()
			select {
			case <-ctx.Done():
			case err := <-errc:
				cancel()
				return err
			case err := <-loopErr:
				if err != nil {
					return err
				}
			}
			shut, c2 := context.WithTimeout(context.Background(), 5*time.Second)
			defer c2()
			_ = srv.Shutdown(shut)
			<-loopErr
			return nil
		},
	}
	s.register(cmd.Flags(), true)
	ha.register(cmd.Flags())
	s.autoplan.register(cmd.Flags())
	s.beside.register(cmd.Flags()) // beside.go
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:8080", "address of the HTTP API")
	cmd.Flags().StringVar(&tokenFile, "api-token-file", "", "file with a bearer token required by POST /api/v1/sync and /api/v1/approve (required when --listen is not loopback)")
	cmd.Flags().StringSliceVar(&allowedHosts, "api-allowed-hosts", nil, "further Host names the API answers besides loopback, localhost and the --listen address, e.g. a reverse proxy's gitaso.example.com; .example.com for a domain and its subdomains, * for any (repeatable)")
	cmd.Flags().StringVar(&webhookSecretFile, "webhook-secret-file", "", "file with the secret of POST /api/v1/webhook (GitHub HMAC signature, GitLab token or bearer token): a push fetches the branch at once")
	durationFlag(cmd.Flags(), &interval, "interval", time.Minute, "how often the branch is polled")
	durationFlag(cmd.Flags(), &unreadyAfter, "unready-after", reconcile.DefaultUnreadyAfter, "/readyz answers 503 once the source has failed to fetch, or the state to be written, for this long (shown at once by the status page, GET /api/v1/status and /metrics); 0: never")
	durationFlag(cmd.Flags(), &syncPeriod, "sync-period", time.Hour, "how often Azure is read back to correct drift (0 disables); reads are bulk Resource Graph queries, writes only where a field differs")
	cmd.Flags().StringSliceVar(&nsPeriods, "namespace-sync-period", nil, "sync period for one namespace, NAMESPACE=DURATION (repeatable; 0 disables)")
	cmd.Flags().StringSliceVar(&kindPeriods, "kind-sync-period", nil, "sync period for one kind, Kind=DURATION or group/Kind=DURATION (repeatable; wins over the namespace)")
	cmd.Flags().StringVar(&pprofListen, "pprof-listen", "", "serve Go's profiles (/debug/pprof/: heap, allocs, profile, goroutine) on this loopback address, e.g. 127.0.0.1:6060 (default: none)")
	cmd.Flags().IntVar(&fullResyncEvery, "full-resync-every", 0, "read every resource in full once every N sync periods; in between a resync reads only what each subscription's Activity Log shows written (0: once a day, 24h / the sync period; 1: every period, the log is not used)")
	return cmd
}

func emulatorCmd(stdout, stderr io.Writer) *cobra.Command {
	var o emulator.CommandOptions
	cmd := &cobra.Command{
		Use:   "emulator",
		Short: "Run a local Azure: ARM and Entra ID over HTTPS with an in-process CA",
		Long: `emulator starts gitaso's ARM + Entra ID emulator on loopback, writes its CA certificate and a cloud
configuration file, creates a bootstrap service principal with Owner on the default subscription and
prints the environment a client needs (eval "$(gitaso emulator ... )" style lines). It runs until
interrupted. State is in memory unless --data is given.

Faults. The --fault-* flags inject failures from the start, e.g. a fifth of writes throttled:

  gitaso emulator --fault-429 0.2 --fault-methods PUT,DELETE

While it runs, the admin API (loopback only, the token it prints as GITASO_EMULATOR_ADMIN_TOKEN) replaces them,
adds provisioning failures and forced answers, and shows what was asked:

  curl -s --cacert "$GITASO_CA_FILE" -X PUT "$GITASO_ARM_ENDPOINT/_admin/faults" -H "X-Admin-Token: $GITASO_EMULATOR_ADMIN_TOKEN" \
    -d '{"rate503":0.1,"resetAfterRate":0.05,"latency":"250ms",
         "provisioningFailures":[{"match":"/resourceGroups/rg-demo/","code":"Conflict"}]}'
  curl -s --cacert "$GITASO_CA_FILE" -X PUT "$GITASO_ARM_ENDPOINT/_admin/faults" -H "X-Admin-Token: $GITASO_EMULATOR_ADMIN_TOKEN" -d '{}'   # none
  curl -s --cacert "$GITASO_CA_FILE" "$GITASO_ARM_ENDPOINT/_admin/requests?limit=20" -H "X-Admin-Token: $GITASO_EMULATOR_ADMIN_TOKEN"

emulator/admin.go lists the admin API; emulator/faults.go the fault fields.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnvAndConfig(cmd.Flags()); err != nil {
				return err
			}
			return emulator.RunCommand(cmd.Context(), o, stdout)
		},
	}
	registerEmulatorFlags(cmd, &o)
	return cmd
}

func durationMap(flag string, items []string) (map[string]time.Duration, error) {
	m := map[string]time.Duration{}
	for _, it := range items {
		k, v, ok := strings.Cut(it, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%s %q: want NAME=DURATION", flag, it)
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", flag, it, err)
		}
		m[k] = d
	}
	return m, nil
}

// ExitPartial is the exit code of a plan or an apply some of whose Flux
// units (Kustomizations, HelmReleases) failed: the others were planned or
// applied, the failed ones' objects kept as last applied.
const ExitPartial = 6

// partialUnits returns an ExitError with ExitPartial naming the failed
// units of a plan, nil when none failed.
func partialUnits(p *planner.Plan) error {
	failed := p.FailedUnits()
	if len(failed) == 0 {
		return nil
	}
	var names []string
	for _, u := range failed {
		names = append(names, u.ID()+" ("+u.Ready.Reason+")")
	}
	return &ExitError{Code: ExitPartial, Err: fmt.Errorf("%d of %d units failed, the others went on; their objects are kept as last applied: %s",
		len(failed), len(p.Units), strings.Join(names, ", "))}
}
