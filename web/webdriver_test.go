package web_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// A minimal W3C WebDriver client for chromedriver: enough to load a page,
// click, type, run a script and take a screenshot.

type webDriver struct {
	t       testing.TB
	base    string // http://127.0.0.1:port/session/<id>
	timeout time.Duration
}

const elementKey = "element-6066-11e4-a52e-4f735466cecf"

func chromedriverPath(t testing.TB) string {
	t.Helper()
	for _, p := range []string{os.Getenv("GITASO_CHROMEDRIVER"), "/usr/bin/chromedriver"} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("chromedriver not found at /usr/bin/chromedriver (apt-get install -y chromium-driver); skipping interactive browser test")
	return ""
}

// newWebDriver starts chromedriver and a headless Chromium session with
// extra Chromium flags; both end when the test does.
func newWebDriver(t testing.TB, extraArgs ...string) *webDriver {
	t.Helper()
	bin := chromiumPath(t)
	drv := chromedriverPath(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var logs bytes.Buffer
	cmd := exec.Command(drv, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start chromedriver: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	root := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(root + "/status")
		if err == nil {
			var st struct {
				Value struct {
					Ready bool `json:"ready"`
				} `json:"value"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
			if st.Value.Ready {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not become ready: %v\n%s", err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": bin,
			"args":   append(append(chromiumFlags(t.TempDir()), "--window-size=1400,1000"), extraArgs...),
		},
	}}}
	wd := &webDriver{t: t, base: root, timeout: 30 * time.Second}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	wd.call(http.MethodPost, "/session", caps, &sess)
	if sess.SessionID == "" {
		t.Fatalf("no session id\n%s", logs.String())
	}
	wd.base = root + "/session/" + sess.SessionID
	t.Cleanup(func() { wd.call(http.MethodDelete, "", nil, nil) })
	return wd
}

// call sends one WebDriver command and decodes its "value" into out.
func (wd *webDriver) call(method, path string, body, out any) {
	wd.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			wd.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, wd.base+path, rd)
	if err != nil {
		wd.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		wd.t.Fatalf("webdriver %s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		wd.t.Fatalf("webdriver %s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	if resp.StatusCode != http.StatusOK {
		wd.t.Fatalf("webdriver %s %s: %d %s", method, path, resp.StatusCode, env.Value)
	}
	if out != nil {
		if err := json.Unmarshal(env.Value, out); err != nil {
			wd.t.Fatalf("webdriver %s %s: decode %s: %v", method, path, env.Value, err)
		}
	}
}

func (wd *webDriver) open(url string) {
	wd.t.Helper()
	wd.call(http.MethodPost, "/url", map[string]string{"url": url}, nil)
}

// exec runs a script (a function body; arguments in `arguments`) and decodes
// its return value into out.
func (wd *webDriver) exec(out any, script string, args ...any) {
	wd.t.Helper()
	if args == nil {
		args = []any{}
	}
	wd.call(http.MethodPost, "/execute/sync", map[string]any{"script": script, "args": args}, out)
}

func (wd *webDriver) str(script string, args ...any) string {
	wd.t.Helper()
	var s string
	wd.exec(&s, script, args...)
	return s
}

func (wd *webDriver) find(css string) string {
	wd.t.Helper()
	var el map[string]string
	wd.call(http.MethodPost, "/element", map[string]string{"using": "css selector", "value": css}, &el)
	if el[elementKey] == "" {
		wd.t.Fatalf("no element %s: %v", css, el)
	}
	return el[elementKey]
}

func (wd *webDriver) click(css string) {
	wd.t.Helper()
	wd.call(http.MethodPost, "/element/"+wd.find(css)+"/click", map[string]any{}, nil)
}

func (wd *webDriver) typeInto(css, text string) {
	wd.t.Helper()
	wd.call(http.MethodPost, "/element/"+wd.find(css)+"/value", map[string]string{"text": text}, nil)
}

// waitFor polls a boolean script until it holds; what describes it on failure.
func (wd *webDriver) waitFor(what, script string, args ...any) {
	wd.t.Helper()
	deadline := time.Now().Add(wd.timeout)
	for {
		var ok bool
		wd.exec(&ok, script, args...)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			wd.t.Fatalf("timed out waiting for %s; page text:\n%s", what, wd.str("return document.body.innerText"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (wd *webDriver) screenshot(path string) {
	wd.t.Helper()
	var b64 string
	wd.call(http.MethodGet, "/screenshot", nil, &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		wd.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		wd.t.Fatal(fmt.Errorf("write screenshot: %w", err))
	}
}
