package web_test

import (
	"bytes"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/state"
)

// shot takes a screenshot, keeps it in $GITASO_WEB_SCREENSHOTS when set,
// and decodes it.
func shot(t testing.TB, wd *webDriver, name string) image.Image {
	t.Helper()
	dir := os.Getenv("GITASO_WEB_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	path := filepath.Join(dir, name+".png")
	wd.screenshot(path)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// rect is an element's box in screenshot pixels.
func rect(t testing.TB, wd *webDriver, css string) image.Rectangle {
	t.Helper()
	var r []float64
	wd.exec(&r, `const b = document.querySelector(arguments[0]).getBoundingClientRect(); const d = window.devicePixelRatio || 1;
		return [b.left * d, b.top * d, b.right * d, b.bottom * d];`, css)
	return image.Rect(int(r[0]), int(r[1]), int(r[2]), int(r[3]))
}

// countColour counts the pixels of img within area that are within 10 per
// channel of the colour #rrggbb.
func countColour(img image.Image, area image.Rectangle, hex string) int {
	var want [3]uint32
	fmt.Sscanf(hex, "#%02x%02x%02x", &want[0], &want[1], &want[2])
	n := 0
	area = area.Intersect(img.Bounds())
	for y := area.Min.Y; y < area.Max.Y; y++ {
		for x := area.Min.X; x < area.Max.X; x++ {
			r, g, b, _ := img.At(x, y).RGBA()
			if near(r>>8, want[0]) && near(g>>8, want[1]) && near(b>>8, want[2]) {
				n++
			}
		}
	}
	return n
}

func near(a, b uint32) bool { return math.Abs(float64(a)-float64(b)) <= 10 }

// inked is the share of pixels in area that differ from its top-left
// pixel: a blank area is 0.
func inked(img image.Image, area image.Rectangle) float64 {
	area = area.Intersect(img.Bounds())
	bg := img.At(area.Min.X, area.Min.Y)
	br, bgc, bb, _ := bg.RGBA()
	n, total := 0, 0
	for y := area.Min.Y; y < area.Max.Y; y += 2 {
		for x := area.Min.X; x < area.Max.X; x += 2 {
			r, g, b, _ := img.At(x, y).RGBA()
			total++
			if r != br || g != bgc || b != bb {
				n++
			}
		}
	}
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}

// The graph draws every resource, green where Ready is True and red where
// it is False; search selects and centres a node, whose detail names its
// dependencies and opens its resource page.
//
// The views share one browser session (starting Chromium is most of a
// browser test's time).
func TestBrowserViews(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	checkGraph(t, wd, f)
	checkResourcePage(t, wd, f)
	checkRunPage(t, wd, f)
	checkBannerOnEveryView(t, wd, f) // adds a held run: last
}

func checkGraph(t *testing.T, wd *webDriver, f *fixture) {
	rs, err := f.db.Resources(record.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var nTrue, nFalse int
	for _, r := range rs {
		switch r.ReadyStatus() {
		case record.StatusTrue:
			nTrue++
		case record.StatusFalse:
			nFalse++
		}
	}
	wd.open(f.srv.URL + "/#/graph")
	wd.waitFor("the graph drawn", `return document.getElementById('graph-canvas').dataset.drawn === arguments[0]`, fmt.Sprint(len(rs)))
	info := wd.str(`return document.getElementById('graph-info').textContent`)
	if want := fmt.Sprintf("%d resources", len(rs)); !strings.HasPrefix(info, want) || !strings.Contains(info, fmt.Sprintf("%d not ready", nFalse)) {
		t.Errorf("graph info %q, want %q and %d not ready", info, want, nFalse)
	}
	img := shot(t, wd, "graph")
	area := rect(t, wd, "#graph-canvas")
	green, red := countColour(img, area, "#2da44e"), countColour(img, area, "#cf222e")
	// A node is a disc of radius 2..7 px: at least 10 pixels each.
	if green < 10*nTrue || red < 10*nFalse {
		t.Errorf("graph canvas has %d green and %d red pixels for %d ready and %d not ready resources", green, red, nTrue, nFalse)
	}
	// Outside the canvas the legend uses the same colours; inside, the
	// proportions follow the resources.
	if nTrue > nFalse && green <= red {
		t.Errorf("%d green pixels for %d ready resources, %d red for %d not ready", green, nTrue, red, nFalse)
	}
	notReady := wd.str(`return document.getElementById('graph-notready-list').textContent`)
	if !strings.Contains(notReady, keyStorage) || !strings.Contains(notReady, keyPG) {
		t.Errorf("not-ready list %q lacks %s and %s", notReady, keyStorage, keyPG)
	}

	// Search, then click the centred node on the canvas.
	wd.typeInto("#g-search", "StorageAccount/teamastorage\uE007")
	wd.waitFor("the selected node's detail", `return !document.getElementById('graph-detail').hidden`)
	wd.exec(nil, `document.getElementById('graph-detail').hidden = true`)
	wd.click("#graph-canvas") // WebDriver clicks the element's centre, where the match is
	wd.waitFor("the clicked node's detail", `return !document.getElementById('graph-detail').hidden`)
	detail := wd.str(`return document.getElementById('graph-detail').textContent`)
	for _, want := range []string{"StorageAccount teamastorage", "Not ready", "Depends on", "(owner)"} {
		if !strings.Contains(detail, want) {
			t.Errorf("node detail lacks %q: %s", want, detail)
		}
	}
	img = shot(t, wd, "graph-selected")
	if countColour(img, rect(t, wd, "#graph-canvas"), "#cf222e") < 10 {
		t.Error("the selected not-ready node is not drawn red")
	}
	wd.click("#graph-open")
	wd.waitFor("the resource page", `return location.hash.startsWith('#resource/') && document.getElementById('detail-body').textContent.includes('AuthorizationFailed')`)
	assertNoSecrets(t, "graph view", wd.str(`return document.documentElement.outerHTML`), f.secrets(t))
}

// The resource page shows the last error, the diff of the last change, the
// runs that touched it (linking to the run page), and no secret.
func checkResourcePage(t *testing.T, wd *webDriver, f *fixture) {
	wd.open(f.srv.URL + "/#/resource/" + keyStorage)
	wd.waitFor("the history", `return !!document.querySelector('#history a[href="#run/2"]')`)
	change := wd.str(`return document.getElementById('last-change').textContent`)
	for _, want := range []string{"/sku/name", `"Premium_LRS"`, `"Standard_LRS"`} {
		if !strings.Contains(change, want) {
			t.Errorf("last change lacks %q: %s", want, change)
		}
	}
	hist := wd.str(`return document.getElementById('history').textContent`)
	for _, want := range []string{"#2", "#1", "update", "failed", "create", "applied", "does not have authorization"} {
		if !strings.Contains(hist, want) {
			t.Errorf("history lacks %q: %s", want, hist)
		}
	}
	img := shot(t, wd, "resource")
	if ink := inked(img, rect(t, wd, "#detail-body")); ink < 0.03 {
		t.Errorf("resource page screenshot is blank (%.3f of its pixels inked)", ink)
	}
	// Password fields of the server are redacted in its body and diff.
	wd.open(f.srv.URL + "/#/resource/" + keyPG)
	wd.waitFor("the server page", `return document.getElementById('detail-body').textContent.includes('Applied body')`)
	assertNoSecrets(t, "resource page", wd.str(`return document.documentElement.outerHTML`), f.secrets(t))

	wd.open(f.srv.URL + "/#/resource/" + keyStorage)
	wd.waitFor("the history", `return !!document.querySelector('#history a[href="#run/2"]')`)
	wd.click(`#history a[href="#run/2"]`)
	wd.waitFor("the run page", `return document.getElementById('h-run').textContent === 'Run #2' && !!document.getElementById('run-resources')`)
}

// The run page shows the run (revision, trigger, outcome, counts, error)
// and the resources it touched, linking to their pages.
func checkRunPage(t *testing.T, wd *webDriver, f *fixture) {
	wd.open(f.srv.URL + "/#runs")
	wd.waitFor("the runs", `return !!document.querySelector('#runs-body a[href="#run/2"]')`)
	wd.click(`#runs-body a[href="#run/2"]`)
	// The run view still holds run 2 from the resource page's link: wait for
	// the route itself (the view shown, its heading focused) and run 2's
	// rendering, not for an element already there.
	wd.waitFor("the run page", `return !document.getElementById('view-run').hidden && document.activeElement.id === 'h-run' &&
		document.getElementById('run-body').dataset.run === '2' && !!document.getElementById('run-resources')`)
	body := wd.str(`return document.getElementById('run-body').textContent`)
	for _, want := range []string{"partial", "webhook", "fedcba9876543210fedcba9876543210fedcba98", "1 create, 1 delete, 5 no-op, 2 update",
		"AuthorizationFailed", "Resources touched (3)", keyStorage, keyPG, keyContainer, "deleted", "failed"} {
		if !strings.Contains(body, want) {
			t.Errorf("run page lacks %q:\n%s", want, body)
		}
	}
	if got := wd.str(`return document.activeElement.id`); got != "h-run" {
		t.Errorf("focus on %q after opening the run, want its heading", got)
	}
	img := shot(t, wd, "run")
	if ink := inked(img, rect(t, wd, "#run-body")); ink < 0.03 {
		t.Errorf("run page screenshot is blank (%.3f inked)", ink)
	}
	wd.click(`#run-resources a[href="#resource/` + keyPG + `"]`)
	wd.waitFor("the server's page", `return document.getElementById('h-detail').textContent === 'FlexibleServer pg'`)
	wd.open(f.srv.URL + "/#/run/99")
	wd.waitFor("not found", `return document.getElementById('run-body').textContent.includes('run 99 not found')`)
}

// A run's answer arriving after the route moved to another run renders
// nothing: the page keeps the run routed to. Run 2's answer is held until
// run 99's page shows, then released; the stale load finishes (its refresh
// asks for the status afterwards) and run 99's page is still there.
func TestBrowserStaleRunLoad(t *testing.T) {
	wd := newWebDriver(t)
	f := newFixture(t)
	wd.open(f.srv.URL + "/#runs")
	wd.waitFor("the runs", `return !!document.querySelector('#runs-body a[href="#run/2"]')`)
	// No timer-driven refresh: the only load of run 2 is the held one.
	wd.exec(nil, `const a = document.getElementById('autorefresh'); a.checked = false; a.dispatchEvent(new Event('change'))`)
	release := f.holdPath(t, "/api/v1/runs/2")
	wd.open(f.srv.URL + "/#/run/2")
	waitSeen(t, f, 0, "GET /api/v1/runs/2")
	wd.open(f.srv.URL + "/#/run/99")
	wd.waitFor("run 99's page", `return document.getElementById('run-body').textContent.includes('run 99 not found')`)
	n := len(f.seen())
	release()
	waitSeen(t, f, n, "GET /api/v1/runs/2/plan") // run 2's answer arrived and its load went on
	waitSeen(t, f, n, "GET /api/v1/status")      // ... and finished: its refresh asks for the status after
	if body := wd.str(`return document.getElementById('run-body').textContent`); !strings.Contains(body, "run 99 not found") {
		t.Errorf("run 99's page replaced by the stale load of run 2:\n%s", body)
	}
	if h := wd.str(`return document.getElementById('h-run').textContent`); h != "Run #99" {
		t.Errorf("heading %q, want Run #99", h)
	}
}

// waitSeen waits until the fixture has seen a request starting with prefix
// among the requests from the from-th on.
func waitSeen(t *testing.T, f *fixture, from int, prefix string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second) // a hang guard, not a measure
	for {
		seen := f.seen()
		for _, r := range seen[min(from, len(seen)):] {
			if strings.HasPrefix(r, prefix) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request %s after the %d-th; seen %v", prefix, from, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The held banner is on every view, the graph and run pages included.
func checkBannerOnEveryView(t *testing.T, wd *webDriver, f *fixture) {
	f.addHeldRun(t)
	for _, view := range []string{"#/graph", "#/run/1", "#/resource/" + keyStorage, "#resources", "#runs", "#plan"} {
		wd.open(f.srv.URL + "/" + view)
		wd.waitFor("the held banner on "+view, `return !document.getElementById('held').hidden && document.getElementById('held').textContent.includes('is held')`)
	}
}

// The list loads a page at a time; "Load more" follows the continue token
// until every resource is shown.
func TestBrowserLoadMore(t *testing.T) {
	wd := newWebDriver(t)
	db := openState(t)
	const n = 1234
	if err := db.Update(func(w *state.Writer) error {
		for i := range n {
			st := "True"
			if i%7 == 0 {
				st = "False"
			}
			if err := w.PutResource(record.Resource{Namespace: "bulk", Group: "storage.azure.com", Kind: "StorageAccount",
				Name: fmt.Sprintf("acct%05d", i), Ready: record.Condition{Type: "Ready", Status: st}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	srv := serveState(t, db)
	wd.open(srv.URL + "/")
	rows := `return document.querySelectorAll('#resources-body tr').length === arguments[0]`
	wd.waitFor("the first page", rows, 500)
	wd.click("#resources-more")
	wd.waitFor("two pages", rows, 1000)
	wd.click("#resources-more")
	wd.waitFor("every resource", rows, n)
	if !wd.bool(`return document.getElementById('resources-more').hidden`) {
		t.Error("Load more offered after the last page")
	}
	// Refreshing keeps what is shown.
	wd.exec(nil, `document.getElementById('autorefresh').click(); document.getElementById('autorefresh').click();`)
	wd.waitFor("every resource after a refresh", rows, n)
	got := wd.str(`return document.getElementById('resources-caption').textContent`)
	if !strings.Contains(got, fmt.Sprintf("(%d)", n)) {
		t.Errorf("caption %q", got)
	}
}

func (wd *webDriver) bool(script string, args ...any) bool {
	wd.t.Helper()
	var b bool
	wd.exec(&b, script, args...)
	return b
}
