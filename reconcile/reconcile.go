package reconcile

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gitaso/gitaso/aso"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/executor"
	"github.com/gitaso/gitaso/internal/diag"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// Config holds the reconcile settings.
type Config struct {
	// Global is the global credential; nil when only namespace or resource
	// credentials are used (or offline).
	Global *azure.Credential
	// SubscriptionID overrides the global credential's subscription (offline
	// plans).
	SubscriptionID string
	// SubscriptionUnknown says SubscriptionID is a stand-in nobody named
	// (offline validation without --subscription).
	SubscriptionUnknown bool
	// LocalSecrets reads the secrets kept outside Git (the credentials
	// directory), keyed "namespace/name"; it is called on every run, so a
	// rotated or added credential applies on the next one. Nil: none.
	LocalSecrets func() (map[string]map[string]string, error)
	// DefaultPolicy is ASO's DEFAULT_RECONCILE_POLICY.
	DefaultPolicy string
	// NamespacePolicy overrides the default per namespace.
	NamespacePolicy map[string]string
	// Interval is how often the source is polled (daemon).
	Interval time.Duration
	// UnreadyAfter is how long the source may fail to fetch, or the state
	// to be written, before Ready reports the daemon not ready (health.go;
	// DefaultUnreadyAfter; 0: never).
	UnreadyAfter time.Duration
	// SyncPeriod is how often Azure is read back to detect drift even
	// without a commit (ASO's AZURE_SYNC_PERIOD, default 1h; 0 disables).
	SyncPeriod time.Duration
	// NamespaceSyncPeriod and KindSyncPeriod ("Kind" or "group/Kind")
	// override SyncPeriod; the kind wins over the namespace.
	NamespaceSyncPeriod map[string]time.Duration
	KindSyncPeriod      map[string]time.Duration
	// FullResyncEvery is how many sync periods pass between two full reads
	// of a resource; in between, a resync reads only what the subscription's
	// Activity Log shows written since the resource was last read
	// (activity.go). 0 means once a day (24h / the sync period); 1 reads
	// everything every period (the log is not used).
	FullResyncEvery int
	// ActivityLogOverlap is how far before a resource's last read the
	// Activity Log is asked from: Azure records events minutes after the
	// write (default 10m).
	ActivityLogOverlap time.Duration
	// ActivityLogSkew is the margin around gitaso's own writes within
	// which a write with its principal counts as its own when the log is
	// searched for another writer (activity.go): the log's timestamps and
	// this host's clock differ (default 1m).
	ActivityLogSkew time.Duration
	// Parallelism bounds concurrent ARM operations.
	Parallelism int
	// ReadParallelism bounds concurrent reads during a refresh.
	ReadParallelism int
	// Guard holds revisions that delete too much (mass-deletion guard).
	Guard planner.Guard
	// Exports, when set, receives every export after each run (the
	// Kubernetes cluster gitaso runs beside; cluster.go).
	Exports ExportSink
	// ClusterSecrets, when set, reads credential Secrets from that cluster
	// on every run; --credentials-dir and the repository win (inputs.go).
	ClusterSecrets ClusterSecrets
	// Metrics, when set, is told about every plan and every resource the
	// executor finishes (metrics.go).
	Metrics Metrics
	// ASO, when set, reads the ASO objects of the cluster gitaso runs
	// beside (aso.go): a managing run refuses the resources whose ARM ID
	// one of them manages; a plan beside ASO shows what ASO would do.
	ASO ASOReader
	// BesideASO plans beside ASO, which applies the repository (gitaso
	// plan/serve --beside-aso): every run is a plan against live Azure and
	// the cluster's ASO objects with no state of gitaso's; nothing is
	// applied, and the clients should be read-only (azure.ReadOnly).
	BesideASO bool
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Interval: time.Minute, SyncPeriod: time.Hour, Parallelism: 16, ReadParallelism: 16, Guard: planner.DefaultGuard(),
		ActivityLogOverlap: 10 * time.Minute, ActivityLogSkew: time.Minute, UnreadyAfter: DefaultUnreadyAfter}
}

// Reconciler runs source → planner → executor → state, one run at a time.
// It holds only what outlives a run: its configuration and clients, and
// what one run leaves the next (the refresh schedule, the last good
// revision, readiness). What a run learns on its way is a run value
// (doc.go says which is which).
type Reconciler struct {
	// Configuration and clients, set by New.
	src     source.Source
	db      *state.DB
	clients *azure.Clients
	cfg     Config
	log     *slog.Logger
	// started is when the reconciler was made: the Activity Log's writes
	// before it are not judged for another writer (activity.go).
	started time.Time

	mu sync.Mutex // one run at a time

	// The refresh schedule, which runs read and write.
	readMu   sync.Mutex
	lastRead map[string]time.Time // node key → last time Azure was read for it
	nextDue  time.Time            // when the next resource is due for a refresh
	activity activityState        // what the Activity Log path remembers (activity.go)

	// The last good revision, refreshed after a refused one.
	lastGood *planner.Graph
	// lastGoodUnits are lastGood's units (units.go), held ones included.
	lastGoodUnits *unitSet

	// What is logged once, not on every run of a revision.
	reportedIgnored string // the revision whose ignored objects were logged
	reportedHeld    string // the revision whose hold was logged

	// The daemon's state for Loop and the API.
	trigger chan bool
	ready   atomic.Bool
	lastErr atomic.Value // string
	health  health       // the source's fetches and the state's writes (health.go)
	// superseding makes fetch abandon a render a newer commit superseded
	// (set by Loop; supersede.go).
	superseding atomic.Bool
}

// New returns a reconciler. clients may be nil for offline planning.
func New(src source.Source, db *state.DB, clients *azure.Clients, cfg Config, log *slog.Logger) *Reconciler {
	if log == nil {
		log = slog.Default()
	}
	if cfg.Parallelism <= 0 {
		cfg.Parallelism = 16
	}
	if cfg.ReadParallelism <= 0 {
		cfg.ReadParallelism = 16
	}
	return &Reconciler{src: src, db: db, clients: clients, cfg: cfg, log: log, trigger: make(chan bool, 1), lastRead: map[string]time.Time{},
		started: time.Now()}
}

// Options for one run.
type Options struct {
	Trigger string // startup, interval, api, refresh, retry, cli
	// Refresh reads Azure back to detect drift and adoption: every resource
	// when All is set, otherwise only those whose sync period has elapsed.
	Refresh bool
	All     bool
	// DryRun plans without applying or recording anything but the plan.
	DryRun bool
	// ApproveDeletions releases this run's deletions from the deletion
	// guard and the unmanaged-children check (gitaso apply
	// --approve-deletions).
	ApproveDeletions bool
	// WriteNothing refuses, applying nothing (ErrWouldWrite), a phase
	// whose plan would write to Azure: only adoptions without a write
	// (the state's import mark), no-ops, observations and detaches go
	// through. gitaso import and handover adopt so.
	WriteNothing bool

	// expect is the saved plan ApplySaved applies: the run refuses with
	// ErrStalePlan unless its plan is that one.
	expect *SavedPlan
	// deferredOf is the saved plan whose objects known after apply the
	// later phases of ApplySaved apply: such a phase refuses with
	// ErrBeyondSavedPlan when it would change anything else.
	deferredOf *SavedPlan

	// phase, phaseOf and prevRun place a later phase of Once: its number,
	// the ID of the first phase's run and of the phase before it (whose
	// plan state keeps beside the new one: state.Writer.KeepPhasePlan).
	phase            int
	phaseOf, prevRun uint64
}

// Report is what one run did.
type Report struct {
	Run    record.Run
	Plan   *planner.Plan
	Result *executor.Result
	Graph  *planner.Graph
	// Ignored are objects of kinds gitaso does not manage.
	Ignored []manifest.Object
	// Then is the next phase of the run, when objects of this one were
	// known after apply (Plan.Deferred) and their values exist now.
	Then *Report

	observed planner.Observed // what the plan read from Azure (a dry run's, for SavePlan)
	// units are the revision's Flux units (units.go), nil without any.
	units *unitSet
}

// run is one phase of a reconcile (a call of once), or the refresh of the
// last good revision that follows a refused one: what the run is asked and
// learns on its way, handed from step to step (plan, guard, record, apply,
// finish). It lives as long as the phase; what a caller reads afterwards is
// its Report, what the next run needs goes onto the Reconciler.
type run struct {
	opts Options
	rep  *Report
	// start is when the phase started: a resource read in it is next due
	// one sync period after that (refresh.go).
	start time.Time
	// pathMissing is the source path when the revision being planned does
	// not have it (the run plans an empty revision, which the guard holds).
	pathMissing string
	// rebuilt is the state's rebuilt marker when it has one: resources
	// found in Azure as declared are adopted without a write.
	rebuilt *state.RebuiltMark
	// lastGood says the run refreshes the last good revision after a
	// refused one: it is not the newest revision the source has.
	lastGood bool
}

// ErrRefused is returned (wrapped, with the input errors) when a revision is
// invalid and was not applied at all.
var ErrRefused = errors.New("revision refused")

func (r *Reconciler) subscription() string {
	if r.cfg.SubscriptionID != "" {
		return r.cfg.SubscriptionID
	}
	if r.cfg.Global != nil {
		return r.cfg.Global.SubscriptionID
	}
	return ""
}

// Build fetches the source and builds the graph.
func (r *Reconciler) Build(ctx context.Context) (*manifest.Snapshot, *planner.Graph, error) {
	snap, g, _, err := r.build(ctx)
	return snap, g, err
}

// build is Build, with the revision's units (units.go): nil without any.
func (r *Reconciler) build(ctx context.Context) (*manifest.Snapshot, *planner.Graph, *unitSet, error) {
	snap, err := r.fetch(ctx)
	r.noteFetch(ctx, snap, err) // health.go
	var revErr *source.RevisionError
	if errors.As(err, &revErr) {
		if u := source.AsUnavailable(revErr); u != nil {
			// A chart registry that does not answer: the run fails, the
			// revision is not refused, and the next poll tries again.
			return nil, nil, nil, fmt.Errorf("fetch source: %w", u)
		}
		err = r.checkRefused(ctx, revErr)
	}
	if err != nil {
		return nil, nil, nil, fmt.Errorf("fetch source: %w", err)
	}
	local, err := r.secretsOutsideGit(ctx, snap) // inputs.go
	if err != nil {
		return snap, nil, nil, fmt.Errorf("read credential secrets: %w", err)
	}
	opts := r.graphOptions(local)
	if r.cfg.SubscriptionUnknown {
		// Offline with no subscription named: the one the manifests' ARM
		// IDs all name, rather than mixing the zero subscription with it.
		if sub := manifestSubscription(snap.Objects); sub != "" {
			opts.SubscriptionID = sub
		}
	}
	us, err := r.newUnitSet(snap)
	if err != nil {
		return snap, nil, nil, fmt.Errorf("read units: %w", err)
	}
	var g *planner.Graph
	if us != nil {
		// The source's snapshot is shared (a Git source returns it again
		// while the commit is the same): the units' objects go into a copy.
		cp := *snap
		snap = &cp
		g, err = r.buildUnits(ctx, snap, us, opts)
		snap.Units = us.snapshotUnits(snap.Units)
	} else {
		g, err = planner.Build(snap, opts)
	}
	if l := diag.AsList(err); len(l) > 0 {
		source.LocateFields(l, snap.Texts)
	}
	if err != nil {
		return snap, nil, nil, err
	}
	// CEL export expressions were compiled by planner.Build, against each
	// kind's typed self (aso.Validate → aso.CheckExpression).
	return snap, g, us, nil
}

func (r *Reconciler) graphOptions(local map[string]map[string]string) planner.Options {
	return planner.Options{
		SubscriptionID:      r.subscription(),
		SubscriptionUnknown: r.cfg.SubscriptionUnknown,
		Secrets:             local,
		DefaultPolicy:       r.cfg.DefaultPolicy,
		NamespacePolicy:     r.cfg.NamespacePolicy,
	}
}

// checkRefused adds to a refused revision the problems of what did parse
// (field errors, owners, references, credentials: the whole graph), so
// that every error of a commit is reported at once, each at its field's
// line. Errors about objects whose problem is already reported, and an
// error reported twice, are left out.
func (r *Reconciler) checkRefused(ctx context.Context, re *source.RevisionError) error {
	errs := slices.Clone(re.Errors)
	if len(re.Parsed) > 0 {
		snap := &manifest.Snapshot{Revision: re.Revision, Objects: re.Parsed}
		local, err := r.secretsOutsideGit(ctx, snap)
		if err != nil {
			local = nil // checked again, and reported, once the revision is valid
		}
		_, err = planner.Build(snap, r.graphOptions(local))
		extra := diag.AsList(err)
		source.LocateFields(extra, re.Texts)
		extra = source.DropReported(extra, re.Reported)
		unread := unreadFiles(re.Errors)
		seen := map[string]bool{}
		for _, e := range errs {
			seen[e.Error()] = true
		}
		for _, e := range extra {
			if seen[e.Error()] {
				continue
			}
			seen[e.Error()] = true
			if unread != "" && strings.Contains(e.Msg, " not found in namespace ") {
				e.Msg += " (or in " + unread + ", which could not be read)"
			}
			errs = append(errs, e)
		}
	}
	source.LocateFields(errs, re.Texts)
	return &source.RevisionError{Revision: re.Revision, Errors: errs.Sorted(), Parsed: re.Parsed, Reported: re.Reported}
}

// unreadFiles names the files a refused revision could not parse at all
// (errors without an object), "" when there are none.
func unreadFiles(errs diag.List) string {
	var files []string
	for _, e := range errs {
		if e.Object == "" && e.File != "" && strings.HasPrefix(e.Msg, "invalid YAML") && !slices.Contains(files, e.File) {
			files = append(files, e.File)
		}
	}
	if len(files) > 3 {
		files = append(files[:3], fmt.Sprintf("%d more files", len(files)-3))
	}
	return strings.Join(files, ", ")
}

// PlanOnly builds and plans without applying (gitaso plan). With refresh it
// reads Azure.
func (r *Reconciler) PlanOnly(ctx context.Context, refresh bool) (*Report, error) {
	return r.Once(ctx, Options{Trigger: "cli", Refresh: refresh, All: true, DryRun: true})
}

// maxPhases bounds the applies of one run: the revision, then its objects
// known after apply, as long as each phase makes the values of the next.
const maxPhases = 8

// Once runs one reconcile. When objects of the revision wait for values
// that its resources export once applied (planner.Deferred), and this
// apply wrote such a resource, the revision is rendered and planned again
// and what it can now hold is applied in the same call: Report.Then.
func (r *Reconciler) Once(ctx context.Context, opts Options) (*Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.BesideASO {
		return r.besideOnce(ctx, opts) // aso.go
	}
	rep, err := r.once(ctx, opts)
	if err == nil && !opts.DryRun {
		err = r.laterPhases(ctx, rep, opts)
	}
	return rep, err
}

// laterPhases applies, after the phase rep, the objects that were known
// after apply, phase after phase (Report.Then) as long as each phase makes
// the values of the next.
func (r *Reconciler) laterPhases(ctx context.Context, rep *Report, opts Options) error {
	var err error
	for cur, phase := rep, 2; err == nil && mayProgress(cur); phase++ {
		if phase > maxPhases {
			r.log.WarnContext(ctx, "objects still known after apply after the last phase", "phases", maxPhases, "deferred", len(cur.Graph.Deferred))
			break
		}
		r.log.InfoContext(ctx, "applying the objects whose values exist now", "phase", phase, "deferred", len(cur.Graph.Deferred))
		next := opts
		next.phase, next.phaseOf, next.prevRun = phase, rep.Run.ID, cur.Run.ID
		cur.Then, err = r.once(ctx, next)
		cur = cur.Then
	}
	return err
}

// mayProgress reports whether a phase left objects known after apply and
// wrote a resource that exports values: the next phase may resolve them.
func mayProgress(rep *Report) bool {
	if lookupMayProgress(rep) {
		return true
	}
	if rep == nil || rep.Graph == nil || len(rep.Graph.Deferred) == 0 || rep.Plan == nil || rep.Plan.Held != nil ||
		rep.Run.Outcome != record.OutcomeSucceeded {
		return false
	}
	for _, n := range rep.Graph.Nodes {
		if len(n.Exports) == 0 {
			continue
		}
		if pr := rep.Plan.Get(n.Key()); pr != nil && pr.Action.Writes() {
			return true
		}
	}
	return false
}

// once is one phase of Once.
func (r *Reconciler) once(ctx context.Context, opts Options) (*Report, error) {
	rep := &Report{Run: record.Run{Trigger: opts.Trigger, StartedAt: time.Now().UTC(), Phase: opts.phase, PhaseOf: opts.phaseOf}}
	ru := &run{opts: opts, rep: rep, start: rep.Run.StartedAt}
	snap, g, us, err := r.build(ctx)
	rep.units = us
	var missing *source.PathNotFoundError
	if errors.As(err, &missing) {
		// The source path is gone at this revision: plan it as a revision
		// that declares nothing, which the deletion guard always holds
		// (unless approved), instead of failing on every poll.
		ru.pathMissing = missing.Path
		snap = &manifest.Snapshot{Revision: missing.Revision}
		g, err = planner.Build(snap, planner.Options{SubscriptionID: r.subscription(), SubscriptionUnknown: r.cfg.SubscriptionUnknown})
	}
	if snap != nil {
		rep.Run.Revision = snap.Revision
		rep.Ignored = snap.Ignored
	}
	var revErr *source.RevisionError
	if errors.As(err, &revErr) {
		// The commit was fetched but cannot be parsed: refused like any
		// other input error, with its revision.
		rep.Run.Revision = revErr.Revision
		snap = &manifest.Snapshot{Revision: revErr.Revision}
	}
	if err != nil {
		var l diag.List
		if errors.As(err, &l) || snap != nil {
			err = fmt.Errorf("%w: %w", ErrRefused, err)
			rep.Run.Outcome = record.OutcomeRefused
		} else {
			rep.Run.Outcome = record.OutcomeFailed
		}
		rep.Run.Error = err.Error()
		rep.Run.FinishedAt = time.Now().UTC()
		r.lastErr.Store(rep.Run.Error)
		if !opts.DryRun && r.db != nil {
			if werr := r.db.Update(func(w *state.Writer) error {
				if snap != nil {
					if err := w.SetLatestRevision(snap.Revision); err != nil {
						return err
					}
				}
				if err := w.PutRun(&rep.Run); err != nil {
					return err
				}
				if rep.Run.Outcome != record.OutcomeRefused {
					return nil
				}
				// The refusal stands until a later revision renders: the
				// refresh of the last good revision below does not end it.
				return w.SetRefused(&rep.Run)
			}); werr != nil {
				// Not only the log: a run that cannot be recorded is a
				// state failure the loop counts, shows and retries.
				r.log.ErrorContext(ctx, "record refused run", "error", werr)
				err = errors.Join(err, fmt.Errorf("record the run: %w", werr))
			}
		}
		if rep.Run.Outcome == record.OutcomeRefused && !opts.DryRun {
			r.readyWithApplied()
		}
		unavailable := errors.Is(err, source.ErrUnavailable) // a chart registry down: nothing of the revision read
		if (rep.Run.Outcome == record.OutcomeRefused || unavailable) && r.lastGood != nil && opts.Refresh && !opts.DryRun {
			// Keep the last good revision in force: refresh it.
			msg := "revision refused; refreshing the last good revision"
			if unavailable {
				msg = "revision cannot be rendered now (a source it needs does not answer); refreshing the last good revision"
			}
			r.log.WarnContext(ctx, msg, "revision", rep.Run.Revision, "lastGood", r.lastGood.Revision)
			again := &Report{Run: record.Run{Trigger: "refresh", StartedAt: time.Now().UTC(), Revision: r.lastGood.Revision}, units: r.lastGoodUnits}
			return rep, errors.Join(err, r.applyGraph(ctx, &run{opts: opts, rep: again, start: ru.start, lastGood: true}, r.lastGood))
		}
		return rep, err
	}
	rep.Graph = g
	if !opts.DryRun {
		r.clearRefused(ctx, snap.Revision)
	}
	if snap.Revision != r.reportedIgnored {
		// Reported once per revision, not on every refresh of it.
		r.reportedIgnored = snap.Revision
		for _, o := range snap.Ignored {
			r.log.InfoContext(ctx, "ignoring object of a kind gitaso does not manage", "file", o.File, "object", o.ID(), "apiVersion", o.APIVersion())
		}
	}
	return rep, r.applyGraph(ctx, ru, g)
}

// clearRefused ends the standing refusal (state.DB.Refused) once a
// revision renders: rev supersedes the refused one.
func (r *Reconciler) clearRefused(ctx context.Context, rev string) {
	if r.db == nil {
		return
	}
	run, ok, err := r.db.Refused()
	if err == nil && !ok {
		return
	}
	if err == nil {
		err = r.db.Update(func(w *state.Writer) error { return w.ClearRefused() })
	}
	if err != nil {
		r.log.ErrorContext(ctx, "clear the refused revision", "revision", rev, "error", err)
		return
	}
	if run.Revision != rev {
		r.log.InfoContext(ctx, "refused revision superseded: a later revision renders", "refused", run.Revision, "revision", rev)
	}
}

// applyGraph runs the steps of a reconcile for a built graph:
//
//  1. prior: what state holds, after the operations a previous process left
//     in flight have ended;
//  2. plan: the graph against the prior state and, when asked or due,
//     against Azure read back (refresh);
//  3. guard: deletions beyond the guard's limits hold the revision;
//  4. record the plan (and the revision) before anything is sent;
//  5. apply, recording each result as it comes;
//  6. finish: the run's outcome, the results not yet written, the schedule.
func (r *Reconciler) applyGraph(ctx context.Context, ru *run, g *planner.Graph) error {
	rep, opts := ru.rep, ru.opts
	rep.Graph = g
	// Beside ASO gitaso has applied nothing: no state of its own is planned
	// against, whatever the state file holds.
	prior, outputs := map[string]record.Resource{}, planner.Outputs{}
	var err error
	if !r.cfg.BesideASO {
		if prior, outputs, err = r.prior(ctx, g, opts); err != nil {
			return err
		}
		r.observeOtherWriters(prior) // state's marks, from the first run on (activity.go)
		if ru.rebuilt, err = r.rebuiltMark(); err != nil {
			return err
		}
	}
	p, observed, err := r.plan(ctx, ru, g, planner.Input{Prior: prior, Outputs: outputs, AdoptWithoutWrite: ru.rebuilt.Why(), TrustSecretReferences: ru.rebuilt != nil && ru.rebuilt.FromASO, HeldUnits: rep.units.heldIDs()})
	if err != nil {
		rep.Run.Outcome, rep.Run.Error = record.OutcomeRefused, err.Error()
		return fmt.Errorf("%w: %w", ErrRefused, err)
	}
	p.Units = rep.units.planUnits(time.Now().UTC())
	rep.Plan, rep.observed = p, observed
	r.withASO(ctx, p) // aso.go
	r.observePlan(opts, p)
	if r.cfg.BesideASO {
		return nil // never applied, never held: the deletions are ASO's
	}
	p.Held = r.hold(ctx, ru, g, p, prior)
	if opts.expect != nil {
		if err := r.checkSaved(opts.expect, p, prior, rep.observed); err != nil {
			rep.Run.Outcome, rep.Run.Error = record.OutcomeRefused, err.Error()
			return err
		}
	}
	if opts.deferredOf != nil {
		if err := onlyDeferred(opts.deferredOf, p); err != nil {
			rep.Run.Outcome, rep.Run.Error = record.OutcomeRefused, err.Error()
			return err
		}
	}
	if opts.WriteNothing {
		if err := checkWritesNothing(p); err != nil {
			rep.Run.Outcome, rep.Run.Error = record.OutcomeRefused, err.Error()
			return err
		}
	}
	if opts.DryRun {
		return nil // nothing records the plan: it is not encoded
	}
	// What the refresh read is kept for a saved plan (a dry run) only: an
	// apply does not hold it (an entry per resource) while it runs.
	rep.observed = nil
	planJSON, err := encodePlan(p) // compressed; state.Plan decompresses
	if err != nil {
		return err
	}
	if p.Held != nil {
		return r.recordHeld(ctx, ru, g, p, planJSON)
	}
	if err := r.recordPlan(g, planJSON, !ru.lastGood, opts); err != nil {
		return err
	}
	if r.clients == nil {
		return errors.New("apply needs Azure credentials")
	}
	rec, applyErr := r.apply(ctx, g, p, prior, outputs, rep)
	err = r.finish(ru, g, p, rec, applyErr)
	if xerr := r.syncExports(ctx, opts.Refresh); xerr != nil && err == nil {
		err = fmt.Errorf("write exports to the cluster: %w", xerr)
	}
	return err
}

// prior returns what state holds once the operations a previous process
// left in flight have ended: their outcome is the prior state of the plan.
func (r *Reconciler) prior(ctx context.Context, g *planner.Graph, opts Options) (map[string]record.Resource, planner.Outputs, error) {
	prior, outputs, err := r.priorState()
	if err != nil {
		return nil, nil, err
	}
	// Role assignments keep the ARM name their state holds (a move to
	// another namespace included): before operations left in flight are
	// matched and Azure is read, by ARM ID.
	g.KeepNames(prior, outputs)
	if !opts.DryRun && r.clients != nil && r.db != nil {
		if prior, outputs, err = r.resumeOperations(ctx, g, prior, outputs); err != nil {
			return nil, nil, fmt.Errorf("resume operations: %w", err)
		}
	}
	return prior, outputs, nil
}

// plan plans the graph, refreshing from Azure what is due when the run
// asks; it returns what the refresh read (nil without one).
func (r *Reconciler) plan(ctx context.Context, ru *run, g *planner.Graph, in planner.Input) (*planner.Plan, planner.Observed, error) {
	if ru.opts.Refresh && r.clients != nil {
		return r.refresh(ctx, g, in, ru.start, ru.opts.All, ru.opts.DryRun)
	}
	p, err := g.Plan(in)
	return p, nil, err
}

// recordPlan records the revision (when it is the newest the source has:
// latest) and its plan before anything is sent.
func (r *Reconciler) recordPlan(g *planner.Graph, planJSON []byte, latest bool, opts Options) error {
	if r.db == nil {
		return nil
	}
	if err := r.db.Update(func(w *state.Writer) error {
		if latest {
			if err := w.SetLatestRevision(g.Revision); err != nil {
				return err
			}
		}
		if err := keepPhasePlans(w, opts); err != nil {
			return err
		}
		return w.SetPlan(planJSON)
	}); err != nil {
		return fmt.Errorf("record plan: %w", err)
	}
	return nil
}

// keepPhasePlans keeps, before a later phase stores its plan, the plan of
// the phase before it (the whole run's plan is the plans of its phases);
// a first phase drops those of the run before.
func keepPhasePlans(w *state.Writer, opts Options) error {
	if opts.phase > 1 && opts.prevRun != 0 {
		return w.KeepPhasePlan(opts.prevRun)
	}
	return w.ClearPhasePlans()
}

// apply marks the plan's resources in progress and applies it, recording
// each result as it comes; the run's counts and outcome go into rep.
func (r *Reconciler) apply(ctx context.Context, g *planner.Graph, p *planner.Plan, prior map[string]record.Resource,
	outputs planner.Outputs, rep *Report) (*recorder, error) {
	if err := r.markInProgress(p, prior); err != nil {
		return nil, fmt.Errorf("record progress: %w", err)
	}
	rec := newRecorder(r, prior, p)
	ex := executor.New(&clientsFor{r: r, g: g}, executor.Options{Parallelism: r.cfg.Parallelism, Logger: r.log,
		OnResult: r.observeResult(rec.add), OnOperation: rec.operation})
	res, applyErr := ex.Apply(ctx, p, planner.Values{Outputs: outputs, Secrets: g})
	rec.stop()
	r.noteOwnWrites(res)
	rep.Result = res
	if res != nil {
		rep.Run.Counts = map[string]int{}
		for a, n := range p.Summary() {
			rep.Run.Counts[a.String()] = n
		}
		failed := 0
		for _, rr := range res.Resources {
			if rr != nil && (rr.Outcome == executor.Failed || rr.Outcome == executor.Skipped) {
				failed++
			}
		}
		switch {
		case failed == 0:
			rep.Run.Outcome = record.OutcomeSucceeded
		case failed == len(res.Resources):
			rep.Run.Outcome = record.OutcomeFailed
		default:
			rep.Run.Outcome = record.OutcomePartial
		}
		if failed > 0 {
			rep.Run.Error = fmt.Sprintf("%d of %d resources failed or were skipped", failed, len(res.Resources))
		}
		rep.Run.Summary = summary(p)
	}
	return rec, applyErr
}

// finish records the results not yet written and the run, and schedules
// what comes next (the next refresh, readiness).
func (r *Reconciler) finish(ru *run, g *planner.Graph, p *planner.Plan, rec *recorder, applyErr error) error {
	if rec == nil {
		return applyErr
	}
	rep := ru.rep
	if applyErr != nil && rep.Run.Outcome == "" {
		rep.Run.Outcome, rep.Run.Error = record.OutcomeFailed, applyErr.Error()
	}
	rep.Run.FinishedAt = time.Now().UTC()
	endRebuilt := r.noteRebuilt(ru, p)
	if err := r.record(p, rec, &rep.Run, endRebuilt, r.unitsWriter(p, rep)); err != nil {
		return fmt.Errorf("record results: %w", err)
	}
	r.lastGood, r.lastGoodUnits = g, rep.units
	r.nextDue = r.nextRefresh(g)
	if rep.Run.Outcome == record.OutcomeSucceeded {
		r.lastErr.Store("")
	} else {
		r.lastErr.Store(rep.Run.Error)
	}
	r.ready.Store(true)
	return applyErr
}

func summary(p *planner.Plan) string {
	s := p.Summary()
	var parts []string
	for _, a := range planner.Actions {
		if s[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", s[a], a))
		}
	}
	return strings.Join(parts, ", ")
}

// priorState loads what was applied before and the exported values.
func (r *Reconciler) priorState() (map[string]record.Resource, planner.Outputs, error) {
	outputs := planner.Outputs{}
	if r.db == nil {
		return map[string]record.Resource{}, outputs, nil
	}
	rs, err := r.db.Resources(record.Filter{})
	if err != nil {
		return nil, nil, fmt.Errorf("read state: %w", err)
	}
	prior := make(map[string]record.Resource, len(rs))
	for _, res := range rs {
		prior[res.Key()] = res
		for k, v := range res.Outputs {
			name, key, ok := strings.Cut(k, "/")
			if ok {
				outputs[planner.OutputKey(res.Namespace, false, name, key)] = v
			}
		}
		seen := map[string]bool{}
		for _, k := range res.SecretOutputs {
			name, _, ok := strings.Cut(k, "/")
			if !ok || seen[name] {
				continue
			}
			seen[name] = true
			vals, found, err := r.db.SecretExports(res.Namespace, name)
			if err != nil || !found {
				continue
			}
			for kk, v := range vals {
				outputs[planner.OutputKey(res.Namespace, true, name, kk)] = v
			}
		}
	}
	return prior, outputs, nil
}

// record writes the results not yet recorded and the run, in one
// transaction.
func (r *Reconciler) record(p *planner.Plan, rec *recorder, run *record.Run, clearRebuilt bool, units func(*state.Writer) error) error {
	if r.db == nil {
		if units != nil {
			return units(nil)
		}
		return nil
	}
	return r.db.Update(func(w *state.Writer) error {
		if err := rec.write(w); err != nil {
			return err
		}
		if units != nil {
			if err := units(w); err != nil {
				return err
			}
		}
		if clearRebuilt {
			if err := w.ClearRebuilt(); err != nil {
				return err
			}
		}
		if run.Outcome == record.OutcomeSucceeded || run.Outcome == record.OutcomePartial {
			if err := w.SetLastGoodRevision(p.Revision); err != nil {
				return err
			}
		}
		if run.Outcome == record.OutcomeSucceeded {
			// Every deletion is done: no run needs the child listings
			// recorded for them (listings.go).
			if _, err := w.DeleteListings("", time.Time{}); err != nil {
				return err
			}
		}
		if err := w.PutRun(run); err != nil {
			return err
		}
		return w.PutTouched(run, rec.touched)
	})
}

func recordOne(w *state.Writer, rr *executor.ResourceResult, prior record.Resource, rev string, now time.Time) error {
	pr := rr.Resource
	switch rr.Outcome {
	case executor.Deleted, executor.Detached:
		if err := dropExports(w, pr.Namespace, prior); err != nil {
			return err
		}
		if err := w.DeleteChange(rr.Key); err != nil {
			return err
		}
		return w.DeleteResource(rr.Key)
	}
	if rr.Outcome == executor.Failed && (pr.Action == planner.Delete) {
		setReady(&prior, prior.Ready, rr.Ready, rr.Ready.ObservedGeneration, now)
		return w.PutResource(prior)
	}
	if pr.MovedFrom != "" && prior.Key() == pr.MovedFrom {
		// A move: the record leaves the old key (whatever the outcome, so
		// that the old key is never planned as a deletion); exports written
		// for the old namespace go with it.
		if prior.Namespace != pr.Namespace {
			if err := dropExports(w, prior.Namespace, prior); err != nil {
				return err
			}
		}
		if err := w.DeleteResource(pr.MovedFrom); err != nil {
			return err
		}
	}
	// A body recorded before values substituted from Secrets were masked
	// (an earlier gitaso) is masked now, also as the previous body of a
	// change, even when nothing else changes.
	masked, remasked := planner.MaskRecorded(prior.AppliedBody, pr.Sensitive)
	if remasked {
		prior.AppliedBody = masked
	}
	s := prior
	s.Namespace, s.Group, s.Version, s.Kind, s.Name = pr.Namespace, pr.Group, pr.Version, pr.Kind, pr.Name
	s.File, s.Policy, s.Credential = pr.File, string(pr.Policy), pr.Credential
	s.Origin = pr.Origin.String()
	s.Unit = pr.Origin.Unit()
	s.DeleteUnmanaged = pr.DeleteUnmanaged
	if pr.Action != planner.Delete && pr.Action != planner.Detach {
		s.DependsOn = pr.DependsOn
	}
	desired := pr.Hash
	if desired == "" {
		desired = rr.Hash
	}
	gen := generation(prior, desired, pr.ARMID)
	s.Generation = gen
	if desired != "" {
		s.DesiredHash = desired
	}
	if rr.Outcome == executor.Applied || rr.Hash != "" {
		// The PUT succeeded (even when an export after it failed).
		if err := keepChange(w, prior, rr, rev, now); err != nil {
			return err
		}
		s.ARMID, s.APIVersion = pr.ARMID, pr.APIVersion
		s.AppliedHash, s.AppliedBody, s.SecretHashes = rr.Hash, rr.Body, rr.SecretHashes
		s.Revision = rev
	}
	if s.ARMID == "" || rr.Outcome == executor.Observed {
		s.ARMID, s.APIVersion = pr.ARMID, pr.APIVersion
	}
	if rr.Outcome == executor.Unchanged {
		s.Revision = rev
	}
	setReady(&s, prior.Ready, rr.Ready, gen, now)
	if rr.Outcome == executor.Applied || rr.Outcome == executor.Observed || rr.Hash != "" {
		s.Outputs = map[string]string{}
		s.SecretOutputs = nil
		for name, kv := range rr.Outputs {
			for k, v := range kv {
				s.Outputs[name+"/"+k] = v
			}
			if err := w.PutExports(pr.Namespace, name, kv); err != nil {
				return err
			}
		}
		for name, kv := range rr.Secrets {
			for k := range kv {
				s.SecretOutputs = append(s.SecretOutputs, name+"/"+k)
			}
			if err := w.PutSecretExports(pr.Namespace, name, kv); err != nil {
				return err
			}
		}
		sort.Strings(s.SecretOutputs)
		if len(s.Outputs) == 0 {
			s.Outputs = nil
		}
	}
	if !remasked && unchanged(prior, s) {
		return nil // a run writes only the records that changed
	}
	return w.PutResource(s)
}

// unchanged reports whether next is prior with only UpdatedAt moved on: its
// record need not be written (updatedAt is when the record last changed).
func unchanged(prior, next record.Resource) bool {
	if prior.Key() != next.Key() || prior.UpdatedAt.IsZero() {
		return false
	}
	next.UpdatedAt = prior.UpdatedAt
	a, err1 := json.Marshal(prior)
	b, err2 := json.Marshal(next)
	return err1 == nil && err2 == nil && bytes.Equal(a, b)
}

func outputNames(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		name, _, _ := strings.Cut(k, "/")
		out[name] = true
	}
	return out
}

func toSet(l []string) map[string]string {
	m := map[string]string{}
	for _, s := range l {
		m[s] = ""
	}
	return m
}

// clientsFor maps a plan's credential names to ARM clients for one graph.
type clientsFor struct {
	r *Reconciler
	g *planner.Graph
}

func (c *clientsFor) For(ctx context.Context, name string) (*azure.Client, error) {
	return c.client(name)
}

func (c *clientsFor) client(name string) (*azure.Client, error) {
	var cred *azure.Credential
	if name == "" || name == "global" {
		if c.r.cfg.Global == nil {
			return nil, fmt.Errorf("no global Azure credential: set AZURE_TENANT_ID, AZURE_CLIENT_ID and a secret, or give the namespace an %s secret", aso.NamespaceCredentialSecret)
		}
		cred = c.r.cfg.Global
	} else {
		ns, sec, _ := strings.Cut(name, "/")
		data, ok := c.g.SecretData(ns, sec)
		if !ok {
			return nil, fmt.Errorf("credential secret %s not found", name)
		}
		var err error
		cred, err = azure.CredentialFromSecret(name, data)
		if err != nil {
			return nil, err
		}
	}
	return c.r.clients.For(cred)
}
