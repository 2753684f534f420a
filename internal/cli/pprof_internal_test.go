package cli

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
)

func TestPprofServesProfilesOnLoopbackOnly(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, addr := range []string{"0.0.0.0:0", "10.1.2.3:6060", "example.com:6060", "no-port"} {
		if err := startPprof(ctx, addr, log); err == nil || !strings.Contains(err.Error(), "--pprof-listen") {
			t.Errorf("startPprof(%q) = %v, want an error naming --pprof-listen", addr, err)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := startPprof(ctx, addr, log); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile") {
		t.Fatalf("GET /debug/pprof/heap: %d %.80s", resp.StatusCode, body)
	}
	cancel()
}
