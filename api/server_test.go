package api_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/state"
)

// serve runs NewServer(api.New(...), o) on a loopback listener until the
// test ends and returns its address.
func serve(t *testing.T, o api.ServerOptions) string {
	t.Helper()
	db, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	o.Logger = quiet
	srv := api.NewServer(api.New(db, api.Options{Logger: quiet, Sync: func(context.Context) error { return nil },
		Webhook: func(context.Context) error { return nil }, WebhookSecret: "s"}), o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		srv.Close()
	})
	return ln.Addr().String()
}

// attack opens n connections of one kind to addr and keeps feeding them:
//
//	header: a request line and headers, one more header byte every 50 ms;
//	body:   a POST promising 100 KB, one body byte every 50 ms;
//	idle:   one complete request, then nothing (a parked keep-alive).
//
// It returns the connections; the feeding stops when ctx ends.
func attack(ctx context.Context, t *testing.T, addr, kind string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		var start, drip string
		switch kind {
		case "header":
			start, drip = "GET /api/v1/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ", "a"
		case "body":
			start, drip = "POST /api/v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n", " "
		case "idle":
			start = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
		}
		if _, err := io.WriteString(c, start); err != nil {
			t.Fatal(err)
		}
		if kind == "idle" {
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatalf("idle: first response: %v", err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		conns = append(conns, c)
		if drip != "" {
			go func() {
				tick := time.NewTicker(50 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-ctx.Done():
						return
					case <-tick.C:
						_ = c.SetWriteDeadline(time.Now().Add(time.Second))
						if _, err := io.WriteString(c, drip); err != nil {
							return
						}
					}
				}
			}()
		}
	}
	return conns
}

// openCount reports how many of conns the server still holds: a read that
// times out means open, EOF or a reset means closed (a response the server
// sent before closing, e.g. 408, is read past).
func openCount(conns []net.Conn) int {
	var mu sync.Mutex
	var wg sync.WaitGroup
	open := 0
	for _, c := range conns {
		wg.Go(func() {
			_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			buf := make([]byte, 4096)
			for {
				_, err := c.Read(buf)
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					mu.Lock()
					open++
					mu.Unlock()
					return
				}
				if err != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return open
}

// TestServerDropsSlowAndIdleConnections attacks a real listener with slow
// headers, slow bodies and parked keep-alive connections: with
// DefaultServerOptions' kind of limits (scaled down) every one is closed
// soon after its timeout; with the old configuration (a header timeout
// only) slow bodies and idle connections stay open.
func TestServerDropsSlowAndIdleConnections(t *testing.T) {
	const perKind = 40
	scaled := api.ServerOptions{
		ReadHeaderTimeout: 300 * time.Millisecond,
		ReadTimeout:       600 * time.Millisecond,
		WriteTimeout:      time.Second,
		IdleTimeout:       400 * time.Millisecond,
		MaxHeaderBytes:    8 << 10,
	}
	old := api.ServerOptions{ReadHeaderTimeout: 300 * time.Millisecond}
	for _, tc := range []struct {
		name string
		o    api.ServerOptions
		want map[string]int // connections still open after the wait
	}{
		{"limits", scaled, map[string]int{"header": 0, "body": 0, "idle": 0}},
		{"header timeout only", old, map[string]int{"header": 0, "body": perKind, "idle": perKind}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := serve(t, tc.o)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			conns := map[string][]net.Conn{}
			for _, kind := range []string{"header", "body", "idle"} {
				conns[kind] = attack(ctx, t, addr, kind, perKind)
			}
			time.Sleep(1500 * time.Millisecond) // > every timeout of the limits, with room for a loaded machine
			got := map[string]int{}
			for kind, cs := range conns {
				got[kind] = openCount(cs)
			}
			t.Logf("%s: still open after 1.5 s of %d per kind: %v", tc.name, perKind, got)
			for kind, want := range tc.want {
				if got[kind] != want {
					t.Errorf("%s: %d of %d connections still open, want %d", kind, got[kind], perKind, want)
				}
			}
		})
	}
}

func TestServerLimits(t *testing.T) {
	o := api.DefaultServerOptions()
	srv := api.NewServer(http.NotFoundHandler(), o)
	if srv.ReadHeaderTimeout <= 0 || srv.ReadTimeout <= 0 || srv.WriteTimeout <= 0 || srv.IdleTimeout <= 0 || srv.MaxHeaderBytes <= 0 || srv.ErrorLog == nil {
		t.Errorf("NewServer(DefaultServerOptions()) leaves a limit unset: %+v", srv)
	}
	if o.ReadTimeout < o.ReadHeaderTimeout || o.WriteTimeout < o.ReadTimeout {
		t.Errorf("inconsistent defaults: %+v", o)
	}
	// Oversized headers are refused before any handler runs.
	addr := serve(t, api.ServerOptions{ReadHeaderTimeout: time.Second, ReadTimeout: time.Second, MaxHeaderBytes: 4 << 10})
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/api/v1/runs", nil)
	req.Header.Set("X-Big", strings.Repeat("b", 16<<10))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("16 KiB header: %d, want 431", resp.StatusCode)
	}
	resp, err = http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz: %d", resp.StatusCode)
	}
}
