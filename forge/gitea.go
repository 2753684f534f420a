package forge

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// newGitea talks to Gitea and Forgejo (https://docs.gitea.com/api, the
// swagger at /api/swagger): the same calls as GitHub under /api/v1, with
// "Authorization: token X", "limit" for the page size, and statuses that
// also know "warning" (not used).
func newGitea(o Options, c *client) (Forge, error) {
	if o.BaseURL == "" {
		return nil, fmt.Errorf("gitea: no server URL (--forge-url https://HOST)")
	}
	u, err := url.Parse(strings.TrimRight(o.BaseURL, "/"))
	if err != nil || u.Scheme == "" || u.Host == "" {
		return nil, fmt.Errorf("gitea URL %q: want https://HOST", o.BaseURL)
	}
	api := u.String()
	if !strings.HasSuffix(u.Path, "/api/v1") {
		api += "/api/v1"
	}
	c.auth = func(h http.Header, tok string) { h.Set("Authorization", "token "+tok) }
	return newGitHubLike(o, c, api, "gitea", "limit")
}
