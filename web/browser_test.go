package web_test

import (
	"bytes"
	"context"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
)

// These tests drive a real headless Chromium (Debian packages chromium and
// chromium-driver). They skip when it is not installed; set GITASO_CHROMIUM
// to use another binary and GITASO_WEB_SCREENSHOTS to a directory to keep
// the screenshots.

func chromiumPath(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	for _, p := range []string{os.Getenv("GITASO_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("headless Chromium not found at /usr/bin/chromium (apt-get install -y chromium chromium-driver); skipping browser test")
	return ""
}

// chromiumFlags make Chromium usable headless as root on a closed network.
func chromiumFlags(userDataDir string) []string {
	return []string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-dev-shm-usage", "--disable-extensions", "--no-default-browser-check",
		"--user-data-dir=" + userDataDir,
	}
}

// runChromium runs Chromium once on url with extra flags and returns stdout.
func runChromium(t *testing.T, url string, extra ...string) string {
	t.Helper()
	bin := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append(chromiumFlags(t.TempDir()), extra...)
	args = append(args, url)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %s: %v\nstderr:\n%s", url, err, stderr.String())
	}
	return stdout.String()
}

// dumpDOM loads url, lets the page's scripts and fetches run on a virtual
// clock, and returns the serialised DOM.
func dumpDOM(t *testing.T, url string) string {
	t.Helper()
	dom := runChromium(t, url, "--virtual-time-budget=4000", "--dump-dom")
	if !strings.Contains(dom, "</html>") {
		t.Fatalf("no DOM dumped for %s:\n%s", url, dom)
	}
	return dom
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

// text is the text content of an HTML fragment.
func text(fragment string) string { return html.UnescapeString(tagRE.ReplaceAllString(fragment, "")) }

// element returns the outer HTML of the first element <tag ... attr ...>
// whose start tag contains attr, up to its closing tag (elements of the same
// tag must not nest, which holds for the page's rows, pres and sections).
func element(t *testing.T, dom, tag, attr string) string {
	t.Helper()
	re := regexp.MustCompile(`(?s)<` + tag + `\b[^>]*` + regexp.QuoteMeta(attr) + `[^>]*>.*?</` + tag + `>`)
	m := re.FindString(dom)
	if m == "" {
		t.Fatalf("no <%s %s> in the DOM", tag, attr)
	}
	return m
}

// between returns the DOM from the first occurrence of from up to to.
func between(t *testing.T, dom, from, to string) string {
	t.Helper()
	i := strings.Index(dom, from)
	j := strings.Index(dom, to)
	if i < 0 || j < i {
		t.Fatalf("no %s ... %s in the DOM", from, to)
	}
	return dom[i:j]
}

func assertNoSecrets(t *testing.T, what, s string, secrets []string) {
	t.Helper()
	for _, sec := range secrets {
		if sec != "" && strings.Contains(s, sec) {
			t.Errorf("%s shows a secret value %q", what, sec)
		}
	}
}

func TestBrowserResources(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dom := dumpDOM(t, f.srv.URL+"/#resources")
	assertNoSecrets(t, "resources view", dom, f.secrets(t))

	rs, err := f.db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	body := element(t, dom, "tbody", `id="resources-body"`)
	rows := regexp.MustCompile(`<tr `).FindAllStringIndex(body, -1)
	if len(rows) != len(rs) {
		t.Errorf("%d rows, want %d (one per resource in state)", len(rows), len(rs))
	}
	for _, r := range rs {
		rowHTML := element(t, body, "tr", `data-key="`+r.Key()+`"`)
		row := text(rowHTML)
		for _, want := range []string{r.Namespace, r.Kind, r.Name, r.Revision[:12]} {
			if !strings.Contains(row, want) {
				t.Errorf("row %s lacks %q: %s", r.Key(), want, row)
			}
		}
		// The ARM ID: its tail in the row, the full ID in the title.
		if !strings.Contains(rowHTML, `title="`+html.EscapeString(r.ARMID)+`"`) || !strings.Contains(row, "…/") || !strings.Contains(row, r.ARMID[strings.LastIndex(r.ARMID, "/"):]) {
			t.Errorf("row %s lacks the ARM ID %q (title) and its tail: %s", r.Key(), r.ARMID, rowHTML)
		}
	}
	failing := element(t, body, "tr", `data-key="`+keyStorage+`"`)
	if !strings.Contains(failing, `class="row-false"`) {
		t.Errorf("failing storage account row not marked: %.200s", failing)
	}
	ft := text(failing)
	for _, want := range []string{"Not ready (Error)", "AuthorizationFailed", authzMessage} {
		if !strings.Contains(ft, want) {
			t.Errorf("failing row lacks %q: %s", want, ft)
		}
	}
	if pg := text(element(t, body, "tr", `data-key="`+keyPG+`"`)); !strings.Contains(pg, "Not ready (Info)") || !strings.Contains(pg, "Reconciling") {
		t.Errorf("reconciling server row: %s", pg)
	}
	if got := text(element(t, dom, "div", `id="ready-summary"`)); !strings.Contains(got, "Ready "+strconv.Itoa(len(rs)-2)) || !strings.Contains(got, "Not ready 2") {
		t.Errorf("summary %q, want %d ready and 2 not ready", got, len(rs)-2)
	}
	if got := text(element(t, dom, "p", `id="refreshed"`)); !strings.Contains(got, "last run #2") || !strings.Contains(got, "partial") {
		t.Errorf("header %q lacks the last run", got)
	}
}

func TestBrowserFilterFromURL(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dom := dumpDOM(t, f.srv.URL+"/#resources?namespace=platform&ready=false")
	body := element(t, dom, "tbody", `id="resources-body"`)
	keys := regexp.MustCompile(`<tr [^>]*data-key="([^"]+)"`).FindAllStringSubmatch(body, -1)
	if len(keys) != 1 || keys[0][1] != keyStorage {
		t.Errorf("rows %v, want only %s", keys, keyStorage)
	}
	if !containsAny(f.seen(), "GET /api/v1/resources?namespace=platform&ready=false&limit=500") {
		t.Errorf("the page did not use the API's filters; requests: %v", f.seen())
	}
	if !strings.Contains(element(t, dom, "select", `id="f-ready"`), `value="false"`) {
		t.Error("readiness select not set from the URL")
	}
}

func TestBrowserDetail(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dom := dumpDOM(t, f.srv.URL+"/#resource/platform/storage.azure.com/StorageAccount/teamastorage")
	assertNoSecrets(t, "detail view", dom, f.secrets(t))
	d := text(between(t, dom, `id="view-detail"`, `id="view-runs"`))
	for _, want := range []string{
		"StorageAccount teamastorage", "AuthorizationFailed", authzMessage, "Error",
		"teamastorage-keys/key1", "(value hidden)", // secret output by name only
		`"Standard_LRS"`, // the applied body
		"/sku/name = \"Standard_LRS\" -> \"Standard_GRS\"", // its line of the latest plan
	} {
		if !strings.Contains(d, want) {
			t.Errorf("detail lacks %q:\n%s", want, d)
		}
	}

	dom = dumpDOM(t, f.srv.URL+"/#resource/db/dbforpostgresql.azure.com/FlexibleServer/pg")
	assertNoSecrets(t, "server detail", dom, f.secrets(t))
	d = text(between(t, dom, `id="view-detail"`, `id="view-runs"`))
	for _, want := range []string{`"administratorLoginPassword": "(sensitive value)"`, "~ /properties/administratorLoginPassword = (sensitive value)"} {
		if !strings.Contains(d, want) {
			t.Errorf("server detail lacks %q:\n%s", want, d)
		}
	}

	dom = dumpDOM(t, f.srv.URL+"/#resource/platform/managedidentity.azure.com/UserAssignedIdentity/team-a-identity")
	d = text(between(t, dom, `id="view-detail"`, `id="view-runs"`))
	if !strings.Contains(d, "team-a-identity-settings/principalId"+principalID) {
		t.Errorf("identity detail lacks its output:\n%s", d)
	}
}

// The page renders the stored plan exactly as `gitaso plan` prints it.
func TestBrowserPlanMatchesCLI(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dom := dumpDOM(t, f.srv.URL+"/#plan")
	assertNoSecrets(t, "plan view", dom, f.secrets(t))
	got := text(element(t, dom, "pre", `id="plan-text"`))
	want := f.planText(t, false)
	if got != want {
		t.Errorf("page plan differs from the CLI's text plan\n--- page\n%s\n--- cli\n%s", got, want)
	}
	for _, line := range []string{
		"~ /sku/name = \"Standard_LRS\" -> \"Standard_GRS\"",
		"+ /properties/principalId = (known after apply)",
		"~ /properties/administratorLoginPassword = (sensitive value)",
		"# platform/StorageAccountsBlobServicesContainer/data will be deleted",
		"Plan: 1 to create, 0 to adopt, 2 to update",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("plan lacks %q", line)
		}
	}
}

func TestBrowserRuns(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dom := dumpDOM(t, f.srv.URL+"/#runs")
	body := text(element(t, dom, "tbody", `id="runs-body"`))
	for _, want := range []string{"fedcba987654", "webhook", "partial", "1 create, 1 delete, 5 no-op, 2 update", "AuthorizationFailed", "startup", "succeeded", "42.0 s"} {
		if !strings.Contains(body, want) {
			t.Errorf("runs lack %q:\n%s", want, body)
		}
	}
}

// TestBrowserScreenshots renders each view to a PNG (kept in
// $GITASO_WEB_SCREENSHOTS when set) and checks it is a real image.
func TestBrowserScreenshots(t *testing.T) {
	chromiumPath(t)
	f := newFixture(t)
	dir := os.Getenv("GITASO_WEB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	for _, view := range []string{"resources", "plan", "runs", "resource/platform/storage.azure.com/StorageAccount/teamastorage", "graph", "run/2"} {
		name := filepath.Join(dir, strings.NewReplacer("/", "_").Replace(view)+".png")
		runChromium(t, f.srv.URL+"/#"+view, "--virtual-time-budget=4000", "--hide-scrollbars", "--window-size=1400,1000", "--screenshot="+name)
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
			t.Errorf("%s: not a plausible screenshot (%d bytes)", name, len(b))
		}
	}
}

func containsAny(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
