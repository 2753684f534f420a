package forge

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// ErrNoCI is returned by Detect when the environment is none of the CI
// systems it knows: set the forge with flags.
var ErrNoCI = errors.New("no known CI environment (GitHub Actions, GitLab CI, Azure Pipelines, Gitea or Forgejo Actions)")

// TokenEnv lists, per forge, the variables a token is read from after
// GITASO_FORGE_TOKEN, first set wins.
var TokenEnv = map[string][]string{
	"github":      {"GITHUB_TOKEN"},
	"gitlab":      {"GITLAB_TOKEN", "CI_JOB_TOKEN"},
	"azuredevops": {"SYSTEM_ACCESSTOKEN", "AZURE_DEVOPS_EXT_PAT"},
	"gitea":       {"GITEA_TOKEN", "FORGEJO_TOKEN", "GITHUB_TOKEN"},
}

// TokenFromEnv returns the token for kind: GITASO_FORGE_TOKEN, then the
// forge's usual variables (TokenEnv), and the variable it came from.
func TokenFromEnv(env func(string) string, kind string) (token, from string) {
	for _, v := range append([]string{"GITASO_FORGE_TOKEN"}, TokenEnv[kind]...) {
		if t := strings.TrimSpace(env(v)); t != "" {
			return t, v
		}
	}
	return "", ""
}

// Detect reads the forge, the repository, the pull request and its head
// commit from the CI environment: GitHub Actions (GITHUB_ACTIONS,
// GITHUB_REPOSITORY, GITHUB_API_URL, the event in GITHUB_EVENT_PATH),
// Gitea and Forgejo Actions (the same, with GITEA_ACTIONS or
// FORGEJO_ACTIONS), GitLab CI (GITLAB_CI, CI_API_V4_URL, CI_PROJECT_ID,
// CI_MERGE_REQUEST_IID) and Azure Pipelines (TF_BUILD,
// SYSTEM_COLLECTIONURI, SYSTEM_TEAMPROJECT, BUILD_REPOSITORY_NAME,
// SYSTEM_PULLREQUEST_PULLREQUESTID; GitHub repositories built there too).
// pr is 0 outside a pull request build. The token is read as TokenFromEnv
// says. It returns ErrNoCI outside CI.
func Detect(env func(string) string) (o Options, pr int, sha string, err error) {
	is := func(k string) bool { return strings.EqualFold(env(k), "true") }
	switch {
	case is("GITEA_ACTIONS") || is("FORGEJO_ACTIONS"):
		o = Options{Kind: "gitea", BaseURL: env("GITHUB_SERVER_URL"), Repo: env("GITHUB_REPOSITORY")}
		pr, sha, err = actionsEvent(env)
	case is("GITHUB_ACTIONS"):
		o = Options{Kind: "github", BaseURL: env("GITHUB_API_URL"), Repo: env("GITHUB_REPOSITORY")}
		pr, sha, err = actionsEvent(env)
	case is("GITLAB_CI"):
		o = Options{Kind: "gitlab", BaseURL: env("CI_API_V4_URL"), Repo: env("CI_PROJECT_ID")}
		if o.Repo == "" {
			o.Repo = env("CI_PROJECT_PATH")
		}
		pr, err = optionalInt("CI_MERGE_REQUEST_IID", env("CI_MERGE_REQUEST_IID"))
		sha = firstSet(env("CI_MERGE_REQUEST_SOURCE_BRANCH_SHA"), env("CI_COMMIT_SHA"))
	case is("TF_BUILD"):
		switch p := env("BUILD_REPOSITORY_PROVIDER"); p {
		case "GitHub", "GitHubEnterprise":
			o = Options{Kind: "github", Repo: env("BUILD_REPOSITORY_NAME")}
			if p == "GitHubEnterprise" {
				o.BaseURL = strings.TrimSuffix(env("BUILD_REPOSITORY_URI"), "/"+o.Repo)
			}
			pr, err = optionalInt("SYSTEM_PULLREQUEST_PULLREQUESTNUMBER", env("SYSTEM_PULLREQUEST_PULLREQUESTNUMBER"))
		case "TfsGit", "":
			o = Options{Kind: "azuredevops", BaseURL: strings.TrimRight(env("SYSTEM_COLLECTIONURI"), "/"),
				Repo: env("SYSTEM_TEAMPROJECT") + "/" + env("BUILD_REPOSITORY_NAME")}
			pr, err = optionalInt("SYSTEM_PULLREQUEST_PULLREQUESTID", env("SYSTEM_PULLREQUEST_PULLREQUESTID"))
		default:
			return Options{}, 0, "", fmt.Errorf("azure pipelines: repository provider %q is not supported (Azure Repos, GitHub)", p)
		}
		sha = firstSet(env("SYSTEM_PULLREQUEST_SOURCECOMMITID"), env("BUILD_SOURCEVERSION"))
	default:
		return Options{}, 0, "", ErrNoCI
	}
	if err != nil {
		return Options{}, 0, "", err
	}
	o.Token, _ = TokenFromEnv(env, o.Kind)
	return o, pr, sha, nil
}

// actionsEvent reads the pull request number and head commit of a GitHub,
// Gitea or Forgejo Actions run: from the event payload for pull_request
// and pull_request_target events, else GITHUB_REF (refs/pull/N/merge) and
// GITHUB_SHA.
func actionsEvent(env func(string) string) (pr int, sha string, err error) {
	if path := env("GITHUB_EVENT_PATH"); path != "" {
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return 0, "", fmt.Errorf("read the Actions event (GITHUB_EVENT_PATH): %w", rerr)
		}
		var ev struct {
			Number      int `json:"number"`
			PullRequest *struct {
				Number int `json:"number"`
				Head   struct {
					SHA string `json:"sha"`
				} `json:"head"`
			} `json:"pull_request"`
		}
		if jerr := json.Unmarshal(b, &ev); jerr != nil {
			return 0, "", fmt.Errorf("read the Actions event %s: %w", path, jerr)
		}
		if ev.PullRequest != nil && ev.PullRequest.Number > 0 {
			return ev.PullRequest.Number, firstSet(ev.PullRequest.Head.SHA, env("GITHUB_SHA")), nil
		}
	}
	if ref, ok := strings.CutPrefix(env("GITHUB_REF"), "refs/pull/"); ok {
		n, _, _ := strings.Cut(ref, "/")
		pr, err = optionalInt("GITHUB_REF", n)
	}
	return pr, env("GITHUB_SHA"), err
}

func optionalInt(name, v string) (int, error) {
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q: not a pull request number", name, v)
	}
	return n, nil
}

func firstSet(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
