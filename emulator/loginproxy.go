package emulator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Entra ID's public hosts. MSAL (Python 1.21, as in the Azure CLI 2.45) validates any authority host it does not
// know by asking https://login.microsoftonline.com/common/discovery/instance, whatever cloud it was configured for,
// and fails when that host cannot be reached. The emulator's serving certificate names these hosts, and the login
// proxy (StartLoginProxy) tunnels them to the emulator, so that such a client reaches the emulator's Entra ID with
// HTTPS_PROXY as its only extra setting.
var entraPublicHosts = []string{"login.microsoftonline.com", "login.windows.net"}

// loginProxy is an HTTP CONNECT proxy on loopback that tunnels the emulator's own address and Entra ID's public
// hosts to the emulator and refuses every other destination (403).
type loginProxy struct {
	ln  net.Listener
	srv *http.Server
	wg  sync.WaitGroup
}

// StartLoginProxy starts (once) an HTTP CONNECT proxy on a loopback port and returns its URL ("http://127.0.0.1:PORT")
// for HTTPS_PROXY. It tunnels CONNECT requests for the emulator's address and for login.microsoftonline.com and
// login.windows.net (port 443) to the emulator, whose certificate names those hosts, and for {registry}.azurecr.io
// (port 443) to the listener of that registry (WithRegistry), as Key Vault is served under *.vault.azure.net; anything else answers 403, so a
// client behind it reaches nothing but the emulator. The proxy stops with Close.
func (e *Emulator) StartLoginProxy() (string, error) {
	e.proxyMu.Lock()
	defer e.proxyMu.Unlock()
	if e.proxy != nil {
		return "http://" + e.proxy.ln.Addr().String(), nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("emulator: login proxy: listen: %w", err)
	}
	p := &loginProxy{ln: ln}
	target := e.ln.Addr().String()
	self := strings.TrimPrefix(e.base, "https://")
	p.srv = &http.Server{
		ReadHeaderTimeout: 30 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method != http.MethodConnect {
				http.Error(w, "this proxy only tunnels HTTPS (CONNECT) to the gitaso emulator", http.StatusMethodNotAllowed)
				return
			}
			if reg := e.registryOfHost(r.Host); reg != nil {
				// {registry}.azurecr.io: the registry's own listener, whose
				// certificate names that host (a HelmRepository or
				// OCIRepository URL as it reads against Azure).
				e.tunnel(w, reg.ln.Addr().String(), &p.wg)
				return
			}
			if !proxyAllowed(r.Host, self) {
				http.Error(w, "the gitaso emulator's login proxy tunnels only to the emulator and Entra ID's hosts, not "+r.Host, http.StatusForbidden)
				return
			}
			e.tunnel(w, target, &p.wg)
		}),
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		if err := p.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("emulator login proxy stopped", "err", err)
		}
	}()
	e.proxy = p
	e.log.Info("emulator login proxy started", "proxy", "http://"+ln.Addr().String())
	return "http://" + ln.Addr().String(), nil
}

func proxyAllowed(hostport, self string) bool {
	if strings.EqualFold(hostport, self) {
		return true
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != "443" {
		return false
	}
	for _, h := range entraPublicHosts {
		if strings.EqualFold(host, h) {
			return true
		}
	}
	// Key Vault's data plane ({vault}.vault.azure.net), which the emulator
	// serves too: SOPS files with Key Vault keys open through the proxy.
	// and App Configuration's ({store}.azconfig.io).
	return isVaultHost(host) || isAppConfigHost(host)
}

// tunnel answers 200 to a CONNECT and copies bytes between the client and the emulator's listener.
func (e *Emulator) tunnel(w http.ResponseWriter, target string, wg *sync.WaitGroup) {
	up, err := net.DialTimeout("tcp", target, 10*time.Second)
	if err != nil {
		http.Error(w, "dial emulator: "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "connection cannot be hijacked", http.StatusInternalServerError)
		return
	}
	down, buf, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	if _, err := down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n")); err != nil {
		_ = up.Close()
		_ = down.Close()
		return
	}
	wg.Add(2)
	go func() {
		defer wg.Done()
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			_, _ = up.Write(b)
		}
		_, _ = io.Copy(up, down)
		closeWrite(up)
	}()
	go func() {
		defer wg.Done()
		_, _ = io.Copy(down, up)
		_ = down.Close()
		_ = up.Close()
	}()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
		return
	}
	_ = c.Close()
}

// closeLoginProxy stops the proxy and its tunnels.
func (e *Emulator) closeLoginProxy(ctx context.Context) error {
	e.proxyMu.Lock()
	p := e.proxy
	e.proxy = nil
	e.proxyMu.Unlock()
	if p == nil {
		return nil
	}
	err := p.srv.Shutdown(ctx) // hijacked tunnels are not tracked by the server
	_ = p.srv.Close()
	done := make(chan struct{})
	go func() { p.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return err
}

// ACRDNSSuffix is the DNS suffix of Azure Container Registry login servers
// ({registry}.azurecr.io).
const ACRDNSSuffix = "azurecr.io"

// registryOfHost returns the registry the emulator serves as host:443
// ({name}.azurecr.io), nil for any other host.
func (e *Emulator) registryOfHost(hostport string) *acrRegistry {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != "443" {
		return nil
	}
	name, ok := strings.CutSuffix(strings.ToLower(host), "."+ACRDNSSuffix)
	if !ok || strings.Contains(name, ".") {
		return nil
	}
	return e.registries[name]
}
