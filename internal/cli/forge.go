package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gitaso/gitaso/forge"
	"github.com/gitaso/gitaso/planner"
	"github.com/gitaso/gitaso/reconcile"
)

// commentSettings are the flags of gitaso comment.
type commentSettings struct {
	planFile, refusedFile        string
	kind, url, repo, tokenFile   string
	pr                           int
	sha, marker, context, target string
	outdated                     string
	status, dryRun               bool
	logLevel, logFormat          string
}

func commentCmd(stdout, stderr io.Writer) *cobra.Command {
	s := &commentSettings{}
	cmd := &cobra.Command{
		Use:   "comment",
		Short: "Post a plan to its pull request: one sticky comment, updated in place, and a commit status",
		Long: `comment posts a plan (a file of 'gitaso plan --out', or of 'gitaso plan -o json') to a pull request on
GitHub (github.com and Enterprise Server), GitLab (SaaS and self-managed), Azure DevOps (Services and
Server) or Gitea/Forgejo: one sticky comment, found again by a hidden marker and edited in place, cut into
parts at the forge's size limit with the summary first and the full plan collapsed; and a commit status
with the summary line ("3 to create, 1 to delete"). A refused revision (--refused: what 'gitaso plan'
wrote to stderr) gets a comment listing its errors and a failing status.

The forge, repository, pull request and commit are read from the CI environment (GitHub Actions, GitLab
CI, Azure Pipelines, Gitea and Forgejo Actions); flags override them. The token comes from --token-file,
else GITASO_FORGE_TOKEN, else the forge's usual variable: GITHUB_TOKEN; GITLAB_TOKEN, CI_JOB_TOKEN;
SYSTEM_ACCESSTOKEN; GITEA_TOKEN. It is never printed.

  gitaso plan --out plan.json ... 2> plan.err; gitaso comment --plan plan.json --refused plan.err

It prints the comment's URLs. --dry-run prints the parts instead of posting them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnvAndConfig(cmd.Flags()); err != nil {
				return err
			}
			return runComment(cmd, s, stdout, stderr)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&s.planFile, "plan", "", "the plan: a `FILE` of 'gitaso plan --out' or of 'gitaso plan -o json' ('-': standard input)")
	fs.StringVar(&s.refusedFile, "refused", "", "a `FILE` holding a refused revision's errors (the standard error of 'gitaso plan'); empty or absent: not refused")
	fs.StringVar(&s.kind, "forge", "", "github, gitlab, azuredevops or gitea (default: from the CI environment)")
	fs.StringVar(&s.url, "forge-url", "", "the forge's URL: GitHub Enterprise Server https://HOST, GitLab https://HOST, Azure DevOps https://dev.azure.com/ORG or the collection URL, Gitea https://HOST")
	fs.StringVar(&s.repo, "forge-repo", "", "OWNER/NAME (GitHub, Gitea), the project path or ID (GitLab), PROJECT/REPOSITORY or ORG/PROJECT/REPOSITORY (Azure DevOps)")
	fs.IntVar(&s.pr, "pr", 0, "the pull (merge) request number (default: from the CI environment)")
	fs.StringVar(&s.sha, "sha", "", "the commit the status is for (default: the pull request's head from the CI environment)")
	fs.StringVar(&s.tokenFile, "token-file", "", "a `FILE` holding the forge token")
	fs.StringVar(&s.marker, "marker", forge.DefaultMarker, "the hidden marker of the sticky comment; one per plan posted to the same pull request")
	fs.StringVar(&s.context, "status-context", forge.DefaultContext, "the commit status's name")
	fs.StringVar(&s.target, "status-url", "", "the link of the commit status (default: the CI run)")
	fs.BoolVar(&s.status, "status", true, "also set the commit status")
	fs.StringVar(&s.outdated, "mark-outdated", "", "instead of posting, mark the pull request's plan comment outdated with this `REASON` (a closed pull request)")
	fs.BoolVar(&s.dryRun, "dry-run", false, "print the comment's parts and the status; post nothing")
	fs.StringVar(&s.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&s.logFormat, "log-format", "text", "text or json")
	return cmd
}

func runComment(cmd *cobra.Command, s *commentSettings, stdout, stderr io.Writer) error {
	log := (&settings{logLevel: s.logLevel, logFormat: s.logFormat}).logger(stderr)
	o, pr, sha, err := forge.Detect(os.Getenv)
	switch {
	case errors.Is(err, forge.ErrNoCI):
	case err != nil:
		return fmt.Errorf("read the CI environment: %w", err)
	}
	if s.kind != "" && s.kind != o.Kind {
		o = forge.Options{Kind: s.kind} // a different forge: nothing detected applies
		pr, sha = 0, ""
		o.Token, _ = forge.TokenFromEnv(os.Getenv, s.kind)
	}
	if s.url != "" {
		o.BaseURL = s.url
	}
	if s.repo != "" {
		o.Repo = s.repo
	}
	if s.pr != 0 {
		pr = s.pr
	}
	if s.sha != "" {
		sha = s.sha
	}
	if s.tokenFile != "" {
		if o.Token, err = readTrim(s.tokenFile); err != nil {
			return fmt.Errorf("read --token-file: %w", err)
		}
	}
	o.Marker = s.marker
	if o.Kind == "" {
		return errors.New("no forge: set --forge (github, gitlab, azuredevops or gitea) with --forge-repo, or run in CI")
	}
	if s.outdated != "" {
		if pr == 0 {
			return errors.New("--mark-outdated: no pull request (--pr)")
		}
		f, err := forge.New(o)
		if err != nil {
			return err
		}
		if s.dryRun {
			fmt.Fprintf(stdout, "would mark the plan comment of pull request %d on %s outdated: %s\n", pr, o.Kind, s.outdated)
			return nil
		}
		if err := f.MarkOutdated(cmd.Context(), pr, s.outdated); err != nil {
			return fmt.Errorf("%s pull request %d: %w", o.Kind, pr, err)
		}
		log.Info("plan comment marked outdated", "forge", o, "pr", pr)
		return nil
	}
	p, refused, err := readCommentInput(s.planFile, s.refusedFile)
	if err != nil {
		return err
	}
	parts := forge.Comment(p, refused, forge.Limit(o.Kind), o.Marker)
	if o.Token != "" {
		// Whatever the inputs hold, the token never reaches a comment.
		for i := range parts {
			parts[i] = strings.ReplaceAll(parts[i], o.Token, "(token)")
		}
	}
	st := forge.StatusOf(p, refused)
	st.Context = s.context
	st.TargetURL = firstNonEmpty(s.target, ciRunURL(os.Getenv))
	if s.dryRun {
		return printParts(stdout, o.Kind, pr, sha, parts, st, s.status)
	}
	f, err := forge.New(o)
	if err != nil {
		return err
	}
	if o.Token == "" {
		log.Warn("no forge token (--token-file, GITASO_FORGE_TOKEN or the forge's variable): requests are anonymous", "forge", o.Kind)
	}
	var errs []error
	if pr > 0 {
		urls, err := f.UpsertComment(cmd.Context(), pr, parts)
		for _, u := range urls {
			fmt.Fprintln(stdout, u)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s pull request %d: %w", o.Kind, pr, err))
		} else {
			log.Info("plan comment posted", "forge", o, "pr", pr, "parts", len(parts))
		}
	} else {
		log.Info("not a pull request build (no --pr): no comment posted", "forge", o.Kind)
	}
	if s.status {
		switch {
		case sha == "":
			log.Warn("no commit (--sha): no status set", "forge", o.Kind)
		default:
			if err := f.SetStatus(cmd.Context(), sha, st); err != nil {
				errs = append(errs, fmt.Errorf("%s status of %s: %w", o.Kind, sha, err))
			} else {
				log.Info("commit status set", "sha", sha, "state", st.State, "description", st.Description)
			}
		}
	}
	return errors.Join(errs...)
}

// readCommentInput reads the plan and the refused revision's errors. A
// refused revision may have no plan (plan --out writes none).
func readCommentInput(planFile, refusedFile string) (p *planner.Plan, refused error, err error) {
	if refusedFile != "" {
		b, err := os.ReadFile(refusedFile)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, nil, fmt.Errorf("read --refused: %w", err)
		}
		if text := refusedText(b); text != "" {
			refused = errors.New(text)
		}
	}
	if planFile == "" {
		if refused == nil {
			return nil, nil, errors.New("nothing to post: set --plan FILE (and --refused FILE for a refused revision)")
		}
		return nil, refused, nil
	}
	var b []byte
	if planFile == "-" {
		b, err = io.ReadAll(os.Stdin)
	} else {
		b, err = os.ReadFile(planFile)
	}
	if err != nil {
		if refused != nil && errors.Is(err, os.ErrNotExist) {
			return nil, refused, nil // a refused revision leaves no plan
		}
		return nil, nil, fmt.Errorf("read --plan: %w", err)
	}
	var head struct {
		Format string `json:"format"`
	}
	_ = json.Unmarshal(b, &head)
	if head.Format != "" {
		sp, err := reconcile.ReadSavedPlan(bytes.NewReader(b))
		if err != nil {
			return nil, nil, fmt.Errorf("--plan %s: %w", planFile, err)
		}
		return sp.Plan, refused, nil
	}
	if p, err = planner.ReadJSON(bytes.NewReader(b)); err != nil {
		return nil, nil, fmt.Errorf("--plan %s: %w", planFile, err)
	}
	return p, refused, nil
}

// refusedText keeps the error lines of what 'gitaso plan' wrote to
// standard error, without its log lines.
func refusedText(b []byte) string {
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		t := strings.TrimSpace(l)
		if t == "" || (strings.HasPrefix(t, "time=") && strings.Contains(t, " level=")) || strings.HasPrefix(t, `{"time":`) {
			continue
		}
		keep = append(keep, strings.TrimRight(l, "\r"))
	}
	return strings.Join(keep, "\n")
}

// ciRunURL links a status to the CI run that set it.
func ciRunURL(env func(string) string) string {
	switch {
	case env("GITHUB_SERVER_URL") != "" && env("GITHUB_REPOSITORY") != "" && env("GITHUB_RUN_ID") != "":
		return env("GITHUB_SERVER_URL") + "/" + env("GITHUB_REPOSITORY") + "/actions/runs/" + env("GITHUB_RUN_ID")
	case env("CI_JOB_URL") != "":
		return env("CI_JOB_URL")
	case env("SYSTEM_COLLECTIONURI") != "" && env("SYSTEM_TEAMPROJECT") != "" && env("BUILD_BUILDID") != "":
		return strings.TrimRight(env("SYSTEM_COLLECTIONURI"), "/") + "/" + env("SYSTEM_TEAMPROJECT") + "/_build/results?buildId=" + env("BUILD_BUILDID")
	}
	return ""
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func printParts(w io.Writer, kind string, pr int, sha string, parts []string, st forge.Status, status bool) error {
	total := 0
	for _, p := range parts {
		total += len(p)
	}
	fmt.Fprintf(w, "forge %s, pull request %s: %d part(s), %d bytes (limit %d per comment)\n", kind, orNone(pr), len(parts), total, forge.Limit(kind))
	for i, p := range parts {
		fmt.Fprintf(w, "----- part %d/%d: %d bytes -----\n%s", i+1, len(parts), len(p), p)
		if !strings.HasSuffix(p, "\n") {
			fmt.Fprintln(w)
		}
	}
	if status {
		_, err := fmt.Fprintf(w, "----- status on %s: %s %q: %s -----\n", firstNonEmpty(sha, "(no commit)"), st.Context, st.State, st.Description)
		return err
	}
	return nil
}

func orNone(pr int) string {
	if pr == 0 {
		return "(none)"
	}
	return strconv.Itoa(pr)
}
