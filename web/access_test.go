package web_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gitaso/gitaso/access"
	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/web"
)

// pagePolicy: the platform team syncs in platform, the database team reads
// db, admins may do everything.
const pagePolicy = `
p, group:platform-team, namespaces, sync, platform
p, group:db-team, namespaces, read, db
g, group:admins, role:admin
`

// serveAs serves the fixture's state, with the policy, to one identity (set
// in each request's context as the authentication sets it).
func serveAs(t *testing.T, f *fixture, id access.Identity) string {
	t.Helper()
	pol, err := access.ParsePolicy("policy.csv", []byte(pagePolicy))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	h := api.New(f.db, api.Options{Policy: func() *access.Policy { return pol }, Audit: api.NewAuditor(f.db, log, 0), UI: web.Handler(), Logger: log})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(access.WithIdentity(r.Context(), id)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var dataKeyRE = regexp.MustCompile(`data-key="([^"]+)"`)

// TestBrowserShowsOnlyPermittedResources: in Chromium, two people of
// different teams see only their namespace's resources, in the list, the
// summary and the namespace filter; the audit view is refused to them,
// naming the admin right, and shows an admin who was refused what.
func TestBrowserShowsOnlyPermittedResources(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	rs, err := f.db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, r := range rs {
		count[r.Namespace]++
	}
	if count["platform"] == 0 || count["db"] == 0 {
		t.Fatalf("fixture namespaces %v: want resources in platform and db", count)
	}
	people := []struct {
		id access.Identity
		ns string
	}{
		{access.Identity{Kind: access.User, Subject: "p1", Name: "pat@gitaso.local", Groups: []string{"platform-team"}}, "platform"},
		{access.Identity{Kind: access.User, Subject: "d1", Name: "dana@gitaso.local", Groups: []string{"db-team"}}, "db"},
	}
	for _, p := range people {
		url := serveAs(t, f, p.id)
		dom := dumpDOM(t, url+"/#resources")
		assertNoSecrets(t, "resources view", dom, f.secrets(t))
		body := element(t, dom, "tbody", `id="resources-body"`)
		if rows := len(regexp.MustCompile(`<tr `).FindAllStringIndex(body, -1)); rows != count[p.ns] {
			t.Errorf("%s sees %d rows, want the %d of namespace %s", p.id, rows, count[p.ns], p.ns)
		}
		for _, k := range dataKeyRE.FindAllStringSubmatch(body, -1) {
			if !strings.HasPrefix(k[1], p.ns+"/") {
				t.Errorf("%s sees %s, outside namespace %s", p.id, k[1], p.ns)
			}
		}
		if got := text(element(t, dom, "datalist", `id="namespaces"`)); strings.TrimSpace(got) != "" && !strings.Contains(dom, `<option value="`+p.ns+`">`) {
			t.Errorf("%s's namespace filter offers %q", p.id, got)
		}
		for other := range count {
			if other != p.ns && strings.Contains(dom, `<option value="`+other+`">`) {
				t.Errorf("%s's namespace filter offers namespace %s", p.id, other)
			}
		}
		audit := dumpDOM(t, url+"/#audit")
		if got := text(element(t, audit, "p", `id="audit-refused"`)); !strings.Contains(got, p.id.String()+" lacks the right admin") {
			t.Errorf("%s's audit view says %q, want the refusal naming the admin right", p.id, got)
		}
	}
	admin := access.Identity{Kind: access.User, Subject: "a1", Name: "admin@gitaso.local", Groups: []string{"admins"}}
	url := serveAs(t, f, admin)
	// The refusals above are in the trail: each was recorded before its
	// answer was sent.
	dom := dumpDOM(t, url+"/#audit")
	body := text(element(t, dom, "tbody", `id="audit-body"`))
	for _, want := range []string{"user pat@gitaso.local", "user dana@gitaso.local", "refused", "admin in *"} {
		if !strings.Contains(body, want) {
			t.Errorf("the admin's audit view lacks %q:\n%s", want, body)
		}
	}
	assertNoSecrets(t, "audit view", dom, f.secrets(t))
}
