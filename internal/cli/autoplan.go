package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gitaso/gitaso/autoplan"
	"github.com/gitaso/gitaso/azure"
	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/source"
)

// autoplanSettings are serve's --autoplan flags.
type autoplanSettings struct {
	enabled                    bool
	kind, url, repo, tokenFile string
	marker                     string
	interval                   time.Duration
	mergeRef                   bool
}

func (a *autoplanSettings) register(fs *pflag.FlagSet) {
	fs.BoolVar(&a.enabled, "autoplan", false, "plan every open pull request of --autoplan-forge as if it merged now (against the applied state and live Azure, with a read-only Azure client) and keep its sticky comment and commit status current; merging still applies through --branch")
	fs.StringVar(&a.kind, "autoplan-forge", "", "github, gitlab, azuredevops or gitea")
	fs.StringVar(&a.url, "autoplan-forge-url", "", "the forge's URL (GitHub Enterprise Server, self-managed GitLab, Azure DevOps organization or collection, Gitea); empty: the SaaS forge")
	fs.StringVar(&a.repo, "autoplan-forge-repo", "", "the repository: OWNER/NAME, GitLab project path or ID, Azure DevOps PROJECT/REPOSITORY")
	fs.StringVar(&a.tokenFile, "autoplan-token-file", "", "a `FILE` holding the forge token (else GITASO_FORGE_TOKEN)")
	fs.StringVar(&a.marker, "autoplan-marker", forge.DefaultMarker, "the hidden marker of the sticky comments")
	durationFlag(fs, &a.interval, "autoplan-interval", time.Minute, "how often the open pull requests are listed (a pull-request webhook to /api/v1/webhook lists them at once)")
	fs.BoolVar(&a.mergeRef, "autoplan-merge-ref", false, "plan the forge's test merge of each pull request into its base (GitHub refs/pull/N/merge; Azure DevOps always) instead of its head")
}

// prRef is the reference a forge keeps a pull request under.
func (a *autoplanSettings) prRef(n int) string {
	switch a.kind {
	case "gitlab":
		return fmt.Sprintf("refs/merge-requests/%d/head", n)
	case "azuredevops":
		return fmt.Sprintf("refs/pull/%d/merge", n)
	case "github":
		if a.mergeRef {
			return fmt.Sprintf("refs/pull/%d/merge", n)
		}
	}
	return fmt.Sprintf("refs/pull/%d/head", n)
}

// startAutoplan starts the autoplanner beside the reconciler (leader only)
// and returns its trigger for webhooks; nil without --autoplan.
func (s *settings) startAutoplan(ctx context.Context, e *env) (func(), error) {
	a := s.autoplan
	if !a.enabled {
		return nil, nil
	}
	if s.repo == "" {
		return nil, fmt.Errorf("--autoplan needs --repo (pull requests are fetched from it)")
	}
	token := os.Getenv("GITASO_FORGE_TOKEN")
	if a.tokenFile != "" {
		b, err := os.ReadFile(a.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("read --autoplan-token-file: %w", err)
		}
		token = strings.TrimSpace(string(b))
	}
	f, err := forge.New(forge.Options{Kind: a.kind, BaseURL: a.url, Repo: a.repo, Token: token, Marker: a.marker})
	if err != nil {
		return nil, fmt.Errorf("--autoplan: %w", err)
	}
	cloud, err := azure.LoadCloud(s.cloudConfig)
	if err != nil {
		return nil, fmt.Errorf("--autoplan: %w", err)
	}
	opts := azure.DefaultOptions()
	opts.Logger = e.log
	opts.Metrics = e.metrics // the pull requests' plans read Azure too
	readOnly, err := azure.ReadOnly(cloud, opts)
	if err != nil {
		return nil, fmt.Errorf("--autoplan: %w", err)
	}
	limit := forge.Limit(a.kind)
	ap := autoplan.New(autoplan.Config{
		Forge: f,
		Source: func(pr forge.PullRequest) (source.Source, error) {
			ps := *s
			ps.ref = a.prRef(pr.Number)
			if ps.cacheDir != "" {
				ps.cacheDir = filepath.Join(ps.cacheDir, "pull-requests")
			}
			return ps.source(e.log)
		},
		Plan: func(ctx context.Context, src source.Source) (*reconcile.Report, error) {
			return reconcile.New(src, e.db, readOnly, e.cfg, e.log).PlanOnly(ctx, true)
		},
		Comment: func(p *planner.Plan, refused error) []string { return forge.Comment(p, refused, limit, a.marker) },
		Applied: func() string {
			if s.beside.enabled {
				// Beside ASO nothing is applied: the branch's newest
				// revision is the base a pull request merges into.
				rev, _ := e.db.LatestRevision()
				return rev
			}
			rev, _ := e.db.LastGoodRevision()
			return rev
		},
		Interval: a.interval,
		Logger:   e.log,
	})
	go func() { _ = ap.Run(ctx) }()
	e.log.Info("autoplan: planning open pull requests", "forge", a.kind, "repo", a.repo, "interval", a.interval.String())
	return ap.Trigger, nil
}
