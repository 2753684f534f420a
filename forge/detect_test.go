package forge_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gitaso/gitaso/forge"
)

// TestDetect reads each CI system's environment as its documentation
// lists it.
func TestDetect(t *testing.T) {
	event := "testdata/github-event-pull_request.json"
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    forge.Options
		pr      int
		sha     string
		wantErr error
	}{
		{"github actions pull_request", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/infra",
			"GITHUB_API_URL": "https://api.github.com", "GITHUB_EVENT_PATH": event, "GITHUB_SHA": "merge-commit", "GITHUB_TOKEN": "ghs_x"},
			forge.Options{Kind: "github", BaseURL: "https://api.github.com", Repo: "acme/infra", Token: "ghs_x"}, 42, "1111111111111111111111111111111111111111", nil},
		{"github enterprise push", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/infra",
			"GITHUB_API_URL": "https://ghe.example/api/v3", "GITHUB_REF": "refs/heads/main", "GITHUB_SHA": "abc", "GITASO_FORGE_TOKEN": "t", "GITHUB_TOKEN": "ignored"},
			forge.Options{Kind: "github", BaseURL: "https://ghe.example/api/v3", Repo: "acme/infra", Token: "t"}, 0, "abc", nil},
		{"github ref only", map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "a/b", "GITHUB_REF": "refs/pull/9/merge", "GITHUB_SHA": "m"},
			forge.Options{Kind: "github", Repo: "a/b"}, 9, "m", nil},
		{"gitea actions", map[string]string{"GITHUB_ACTIONS": "true", "GITEA_ACTIONS": "true", "GITHUB_SERVER_URL": "https://gitea.example",
			"GITHUB_REPOSITORY": "acme/infra", "GITHUB_EVENT_PATH": event, "GITEA_TOKEN": "gt", "GITHUB_TOKEN": "other"},
			forge.Options{Kind: "gitea", BaseURL: "https://gitea.example", Repo: "acme/infra", Token: "gt"}, 42, "1111111111111111111111111111111111111111", nil},
		{"forgejo actions", map[string]string{"GITHUB_ACTIONS": "true", "FORGEJO_ACTIONS": "true", "GITHUB_SERVER_URL": "https://codeberg.example",
			"GITHUB_REPOSITORY": "acme/infra", "GITHUB_REF": "refs/pull/3/head", "GITHUB_SHA": "s", "GITHUB_TOKEN": "fj"},
			forge.Options{Kind: "gitea", BaseURL: "https://codeberg.example", Repo: "acme/infra", Token: "fj"}, 3, "s", nil},
		{"gitlab merge request", map[string]string{"GITLAB_CI": "true", "CI_API_V4_URL": "https://gitlab.example/api/v4", "CI_PROJECT_ID": "17",
			"CI_MERGE_REQUEST_IID": "5", "CI_COMMIT_SHA": "c", "CI_JOB_TOKEN": "glcbt-job", "GITLAB_TOKEN": "glpat-x"},
			forge.Options{Kind: "gitlab", BaseURL: "https://gitlab.example/api/v4", Repo: "17", Token: "glpat-x"}, 5, "c", nil},
		{"gitlab merged results", map[string]string{"GITLAB_CI": "true", "CI_API_V4_URL": "https://gitlab.com/api/v4", "CI_PROJECT_ID": "17",
			"CI_MERGE_REQUEST_IID": "5", "CI_COMMIT_SHA": "merge", "CI_MERGE_REQUEST_SOURCE_BRANCH_SHA": "head", "CI_JOB_TOKEN": "glcbt-job"},
			forge.Options{Kind: "gitlab", BaseURL: "https://gitlab.com/api/v4", Repo: "17", Token: "glcbt-job"}, 5, "head", nil},
		{"azure pipelines azure repos", map[string]string{"TF_BUILD": "True", "BUILD_REPOSITORY_PROVIDER": "TfsGit",
			"SYSTEM_COLLECTIONURI": "https://dev.azure.com/acme/", "SYSTEM_TEAMPROJECT": "Platform", "BUILD_REPOSITORY_NAME": "infra",
			"SYSTEM_PULLREQUEST_PULLREQUESTID": "12", "SYSTEM_PULLREQUEST_SOURCECOMMITID": "src", "BUILD_SOURCEVERSION": "merge", "SYSTEM_ACCESSTOKEN": "jwt"},
			forge.Options{Kind: "azuredevops", BaseURL: "https://dev.azure.com/acme", Repo: "Platform/infra", Token: "jwt"}, 12, "src", nil},
		{"azure pipelines github", map[string]string{"TF_BUILD": "True", "BUILD_REPOSITORY_PROVIDER": "GitHub", "BUILD_REPOSITORY_NAME": "acme/infra",
			"SYSTEM_PULLREQUEST_PULLREQUESTNUMBER": "4", "SYSTEM_PULLREQUEST_SOURCECOMMITID": "src", "GITHUB_TOKEN": "g"},
			forge.Options{Kind: "github", Repo: "acme/infra", Token: "g"}, 4, "src", nil},
		{"no ci", map[string]string{"HOME": "/root"}, forge.Options{}, 0, "", forge.ErrNoCI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, pr, sha, err := forge.Detect(func(k string) string { return tc.env[k] })
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, o, cmp.Comparer(func(a, b forge.Options) bool {
				return a.Kind == b.Kind && a.BaseURL == b.BaseURL && a.Repo == b.Repo && a.Token == b.Token
			})); diff != "" || pr != tc.pr || sha != tc.sha {
				t.Errorf("Detect = %+v pr %d sha %q, want pr %d sha %q\n%s", o.LogValue(), pr, sha, tc.pr, tc.sha, diff)
			}
		})
	}
}

// TestDetectedOptionsWork: what Detect returns builds a forge.
func TestDetectedOptionsWork(t *testing.T) {
	o, _, _, err := forge.Detect(func(k string) string {
		return map[string]string{"TF_BUILD": "True", "SYSTEM_COLLECTIONURI": "https://tfs.example/tfs/DefaultCollection/",
			"SYSTEM_TEAMPROJECT": "Platform", "BUILD_REPOSITORY_NAME": "infra"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := forge.New(o); err != nil {
		t.Errorf("New(%v): %v", o.LogValue(), err)
	}
}
