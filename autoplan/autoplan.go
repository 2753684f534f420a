package autoplan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
)

// Config wires an Autoplanner.
type Config struct {
	// Forge lists the open pull requests and takes the comments and
	// statuses.
	Forge forge.Forge
	// Source returns the source of a pull request's head.
	Source func(pr forge.PullRequest) (source.Source, error)
	// Plan plans a source against the applied state and live Azure,
	// read-only (reconcile.Reconciler.PlanOnly over read-only clients).
	Plan func(ctx context.Context, src source.Source) (*reconcile.Report, error)
	// Comment renders a plan, or a refused revision's errors, as the parts
	// of the sticky comment (forge.Comment).
	Comment func(p *planner.Plan, refused error) []string
	// Applied returns the revision the daemon last applied: a pull request
	// is planned again when it changes.
	Applied func() string
	// Interval between passes over the open pull requests (default 1 min).
	Interval time.Duration
	// StatusContext names the commit status ("gitaso/plan" by default).
	StatusContext string
	Logger        *slog.Logger
}

// Autoplanner keeps the plan comments of a forge's open pull requests
// current.
type Autoplanner struct {
	cfg     Config
	trigger chan struct{}

	mu      sync.Mutex
	planned map[int]string // pull request → the head and applied revision it was planned at
	open    map[int]bool   // pull requests open at the last pass
}

// New returns an Autoplanner; Run starts it.
func New(cfg Config) *Autoplanner {
	if cfg.Interval <= 0 {
		cfg.Interval = time.Minute
	}
	if cfg.StatusContext == "" {
		cfg.StatusContext = forge.DefaultContext
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Applied == nil {
		cfg.Applied = func() string { return "" }
	}
	return &Autoplanner{cfg: cfg, trigger: make(chan struct{}, 1), planned: map[int]string{}, open: map[int]bool{}}
}

// Trigger asks for a pass now (a pull-request webhook); it never blocks.
func (a *Autoplanner) Trigger() {
	select {
	case a.trigger <- struct{}{}:
	default:
	}
}

// Run makes a pass at once, then every Interval and on every Trigger,
// until ctx ends.
func (a *Autoplanner) Run(ctx context.Context) error {
	t := time.NewTicker(a.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := a.Pass(ctx); err != nil && ctx.Err() == nil {
			a.cfg.Logger.WarnContext(ctx, "autoplan pass", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-a.trigger:
		}
	}
}

// Result is what one pass did, by pull request number.
type Result struct {
	Planned  []int // planned and posted
	Outdated []int // closed since the last pass: comment marked outdated
	Failed   map[int]error
}

// Pass plans every open pull request whose head or applied revision moved
// since it was last planned, and marks the comments of the pull requests
// that closed as outdated.
func (a *Autoplanner) Pass(ctx context.Context) (*Result, error) {
	prs, err := a.cfg.Forge.OpenPullRequests(ctx)
	if err != nil {
		return nil, fmt.Errorf("list open pull requests: %w", err)
	}
	res := &Result{Failed: map[int]error{}}
	applied := a.cfg.Applied()
	now := map[int]bool{}
	for _, pr := range prs {
		now[pr.Number] = true
		key := pr.HeadSHA + "@" + applied
		a.mu.Lock()
		done := a.planned[pr.Number] == key
		a.mu.Unlock()
		if done {
			continue
		}
		if err := a.planOne(ctx, pr); err != nil {
			res.Failed[pr.Number] = err
			a.cfg.Logger.WarnContext(ctx, "autoplan", "pullRequest", pr.Number, "error", err)
			continue
		}
		a.mu.Lock()
		a.planned[pr.Number] = key
		a.mu.Unlock()
		res.Planned = append(res.Planned, pr.Number)
	}
	a.mu.Lock()
	var closed []int
	for n := range a.open {
		if !now[n] {
			closed = append(closed, n)
		}
	}
	a.open = now
	a.mu.Unlock()
	slices.Sort(closed)
	for _, n := range closed {
		if err := a.cfg.Forge.MarkOutdated(ctx, n, "the pull request is closed; this plan is outdated"); err != nil {
			res.Failed[n] = err
			continue
		}
		a.mu.Lock()
		delete(a.planned, n)
		a.mu.Unlock()
		res.Outdated = append(res.Outdated, n)
	}
	if len(res.Failed) > 0 {
		return res, fmt.Errorf("%d pull requests failed", len(res.Failed))
	}
	return res, nil
}

// planOne plans a pull request's head and posts the comment and status.
func (a *Autoplanner) planOne(ctx context.Context, pr forge.PullRequest) error {
	status := forge.Status{Context: a.cfg.StatusContext, State: forge.StatePending, Description: "planning"}
	if err := a.cfg.Forge.SetStatus(ctx, pr.HeadSHA, status); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	src, err := a.cfg.Source(pr)
	if err != nil {
		return a.fail(ctx, pr, forge.StateError, err)
	}
	rep, err := a.cfg.Plan(ctx, src)
	var refused error
	switch {
	case errors.Is(err, reconcile.ErrRefused):
		refused = err
	case err != nil:
		return a.fail(ctx, pr, forge.StateError, err)
	}
	var p *planner.Plan
	if rep != nil {
		p = rep.Plan
	}
	if refused == nil && p == nil {
		return a.fail(ctx, pr, forge.StateError, errors.New("no plan"))
	}
	if _, err := a.cfg.Forge.UpsertComment(ctx, pr.Number, a.cfg.Comment(p, refused)); err != nil {
		return fmt.Errorf("comment: %w", err)
	}
	status = forge.StatusOf(p, refused) // what gitaso comment posts too
	status.Context = a.cfg.StatusContext
	if err := a.cfg.Forge.SetStatus(ctx, pr.HeadSHA, status); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	a.cfg.Logger.InfoContext(ctx, "autoplan posted", "pullRequest", pr.Number, "head", pr.HeadSHA, "status", status.State, "summary", status.Description)
	return nil
}

func (a *Autoplanner) fail(ctx context.Context, pr forge.PullRequest, state string, err error) error {
	s := forge.Status{Context: a.cfg.StatusContext, State: state, Description: "plan failed: " + firstLine(err.Error())}
	if serr := a.cfg.Forge.SetStatus(ctx, pr.HeadSHA, s); serr != nil {
		return errors.Join(err, serr)
	}
	return err
}

// firstLine keeps a status description short (GitHub allows 140 characters).
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return s
}
