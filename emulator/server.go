package emulator

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Emulator is a running ARM + Entra ID emulator. Create it with New and stop it with Close.
type Emulator struct {
	opts           options
	log            *slog.Logger
	tenantID       string
	subscriptionID string

	ca             *certAuthority
	tokens         *signer // access tokens
	saKeys         *signer // service-account (workload identity) tokens
	adminToken     string
	identityHeader string

	ln         net.Listener
	srv        *http.Server
	base       string
	httpClient *http.Client

	// mu guards the store, the directory, the RBAC index, subscriptions and operations.
	mu       sync.RWMutex
	store    *store
	dir      *directory
	rbac     *rbacIndex
	subs     map[string]*subscription
	ops      map[string]*operation // in flight and recently finished, by ID
	inflight map[string]*operation
	finished []string // IDs of finished operations, oldest first
	pending  atomic.Int64
	hostMI   *principal
	// deletedVaults are soft-deleted Key Vaults by lower-cased name (vault names are global).
	deletedVaults map[string]*deletedVault
	// activity is the Activity Log of control-plane writes (activity.go).
	activity activityLog

	latMu          sync.RWMutex
	latency        map[string]time.Duration
	defaultLatency time.Duration

	faults   *faultInjector
	throttle *throttler
	stats    *statsCollector
	tcache   *tokenCache
	signIns  *signIns // people who sign in, codes not yet redeemed (signin.go)
	persist  *persister

	// registries are the container registries served (WithRegistry), by lower-cased name and in order.
	registries    map[string]*acrRegistry
	registryOrder []*acrRegistry

	// keyOverrides are regenerated Service Bus / Event Hubs rule keys by rule key + "|primary" or "|secondary"
	// (keys_regen.go); guarded by mu.
	keyOverrides map[string]string
	// proxy is the login proxy (loginproxy.go), nil until StartLoginProxy.
	proxyMu sync.Mutex
	proxy   *loginProxy

	closeOnce sync.Once
	closeErr  error
	done      chan struct{}
	wg        sync.WaitGroup
}

type subscription struct {
	ID          string `json:"id"`
	DisplayName string `json:"displayName"`
	State       string `json:"state,omitempty"` // "" is Enabled; Disabled once cancelled (hooks_subscription.go)
	// Tags are the subscription's tags, written through Microsoft.Resources/tags/default (tags.go).
	Tags map[string]any `json:"tags,omitempty"`
}

// New starts an emulator serving HTTPS on a loopback port (see WithAddr). One tenant and one subscription exist;
// principals given WithPrincipals are created with their roles.
func New(opts ...Option) (*Emulator, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	e := &Emulator{
		opts:           o,
		log:            o.logger,
		tenantID:       o.tenantID,
		subscriptionID: o.subscriptionID,
		store:          newStore(),
		dir:            newDirectory(),
		rbac:           newRBACIndex(),
		subs:           map[string]*subscription{},
		ops:            map[string]*operation{},
		inflight:       map[string]*operation{},
		deletedVaults:  map[string]*deletedVault{},
		latency:        o.latency,
		defaultLatency: o.defaultLatency,
		faults:         newFaultInjector(o.faults, o.seed),
		throttle:       newThrottler(o.throttleScale),
		stats:          newStatsCollector(o.logSize),
		tcache:         newTokenCache(),
		signIns:        newSignIns(o.tenantID, o.users),
		done:           make(chan struct{}),
	}
	loaded := false
	if o.dataFile != "" {
		var err error
		loaded, err = e.load(o.dataFile)
		if err != nil {
			return nil, err
		}
	}
	if !loaded {
		if err := e.initFresh(); err != nil {
			return nil, err
		}
	}
	for _, spec := range o.principals {
		if _, err := e.addPrincipal(spec); err != nil {
			return nil, err
		}
	}
	if err := e.listen(); err != nil {
		return nil, err
	}
	if err := e.startRegistries(); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	if o.dataFile != "" {
		e.persist = newPersister(e, o.dataFile, o.flushInterval)
		e.persist.markDirty()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			e.persist.run(e.done)
		}()
	}
	e.log.Info("emulator started", "arm", e.ARMEndpoint(), "tenant", e.tenantID, "subscription", e.subscriptionID)
	return e, nil
}

func (e *Emulator) initFresh() error {
	var err error
	if e.ca, err = newCertAuthority(); err != nil {
		return err
	}
	var saErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.saKeys, saErr = newSigner()
	}()
	e.tokens, err = newSigner()
	<-done
	if err = errors.Join(err, saErr); err != nil {
		return err
	}
	e.adminToken = randomSecret(40)
	e.identityHeader = randomSecret(32)
	e.subs[strings.ToLower(e.subscriptionID)] = &subscription{ID: e.subscriptionID, DisplayName: "gitaso emulator subscription"}
	e.hostMI = &principal{ObjectID: newUUID(), ClientID: newUUID(), DisplayName: "emulator-host-identity", Kind: kindManagedIdentity}
	e.dir.add(e.hostMI)
	return nil
}

func (e *Emulator) listen() error {
	cert, err := e.ca.serverCert(append(append(append(hostOf(e.opts.addr), e.opts.hostnames...), entraPublicHosts...), append(keyVaultCertHosts, "*."+AppConfigDNSSuffix)...))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", e.opts.addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", e.opts.addr, err)
	}
	e.ln = ln
	addr := ln.Addr().(*net.TCPAddr)
	host := "127.0.0.1"
	if h := hostOf(e.opts.addr); len(h) == 1 && h[0] != "" && h[0] != "0.0.0.0" && h[0] != "::" {
		host = h[0]
	}
	e.base = "https://" + net.JoinHostPort(host, fmt.Sprint(addr.Port))
	e.srv = &http.Server{
		Handler:           e,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	pool := e.CertPool()
	e.httpClient = &http.Client{Transport: &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   true,
	}}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		if err := e.srv.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			e.log.Error("emulator server stopped", "err", err)
		}
	}()
	return nil
}

func hostOf(addr string) []string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	return []string{h}
}

// Close stops the server and, with a data file, writes the final snapshot.
func (e *Emulator) Close() error {
	e.closeOnce.Do(func() {
		if t, ok := e.httpClient.Transport.(*http.Transport); ok {
			t.CloseIdleConnections()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := errors.Join(e.srv.Shutdown(ctx), e.closeRegistries(ctx), e.closeLoginProxy(ctx))
		close(e.done)
		e.wg.Wait()
		if e.persist != nil {
			if ferr := e.persist.flush(); ferr != nil {
				err = errors.Join(err, ferr)
			}
		}
		e.closeErr = err
	})
	return e.closeErr
}

// ARMEndpoint is the ARM base URL, e.g. "https://127.0.0.1:40123" (no trailing slash).
func (e *Emulator) ARMEndpoint() string { return e.base }

// AuthorityHost is the Entra ID authority host for azidentity, with a trailing slash.
func (e *Emulator) AuthorityHost() string { return e.base + "/" }

// TenantID is the emulated tenant.
func (e *Emulator) TenantID() string { return e.tenantID }

// SubscriptionID is the default subscription.
func (e *Emulator) SubscriptionID() string { return e.subscriptionID }

// CACertPEM is the PEM of the CA that signed the serving certificate.
func (e *Emulator) CACertPEM() []byte { return append([]byte(nil), e.ca.certPEM...) }

// CertPool is a pool holding only the emulator's CA.
func (e *Emulator) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(e.ca.cert)
	return p
}

// HTTPClient is a client that trusts the emulator's CA (keep-alive, HTTP/2). Use it as azcore's Transport.
func (e *Emulator) HTTPClient() *http.Client { return e.httpClient }

// AdminToken is the token the /_admin endpoints require in the X-Admin-Token header.
func (e *Emulator) AdminToken() string { return e.adminToken }

// ManagedIdentityEndpoint returns the values for IDENTITY_ENDPOINT and IDENTITY_HEADER (the App Service managed
// identity protocol, which azidentity's ManagedIdentityCredential uses when both are set).
func (e *Emulator) ManagedIdentityEndpoint() (endpoint, header string) {
	return e.base + "/msi/token", e.identityHeader
}

// OIDCIssuer is the default issuer of IssueServiceAccountToken (a discovery document and keys are served there).
func (e *Emulator) OIDCIssuer() string { return e.base + "/oidc" }

// CloudConfig is the cloud configuration gitaso reads (see docs/internal-contracts.md).
type CloudConfig struct {
	Name           string `json:"name"`
	ARMEndpoint    string `json:"armEndpoint"`
	AuthorityHost  string `json:"authorityHost"`
	Audience       string `json:"audience"`
	CAFile         string `json:"caFile"`
	TenantID       string `json:"tenantId"`
	SubscriptionID string `json:"subscriptionId"`
}

// CloudConfigJSON renders the cloud configuration file naming caFile as the CA bundle.
func (e *Emulator) CloudConfigJSON(caFile string) []byte {
	b, _ := json.MarshalIndent(CloudConfig{
		Name: "gitaso-emulator", ARMEndpoint: e.ARMEndpoint(), AuthorityHost: e.AuthorityHost(), Audience: ARMAudience,
		CAFile: caFile, TenantID: e.tenantID, SubscriptionID: e.subscriptionID,
	}, "", "  ")
	return append(b, '\n')
}

// AddSubscription adds another subscription to the tenant.
func (e *Emulator) AddSubscription(id, displayName string) {
	e.mu.Lock()
	e.subs[strings.ToLower(id)] = &subscription{ID: strings.ToLower(id), DisplayName: displayName}
	e.mu.Unlock()
	e.markDirty()
}

// SetLatency sets the LRO duration of an ARM type ("*" sets the default).
func (e *Emulator) SetLatency(armType string, d time.Duration) {
	e.latMu.Lock()
	defer e.latMu.Unlock()
	if armType == "*" || armType == "" {
		e.defaultLatency = d
		return
	}
	e.latency[strings.ToLower(armType)] = d
}

func (e *Emulator) latencyFor(typeKey string) time.Duration {
	e.latMu.RLock()
	defer e.latMu.RUnlock()
	if d, ok := e.latency[typeKey]; ok {
		return d
	}
	return e.defaultLatency
}

func (e *Emulator) markDirty() {
	if e.persist != nil {
		e.persist.markDirty()
	}
}

// recorder captures the status of a response.
type recorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *recorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.status, r.wrote = http.StatusOK, true
	}
	return r.ResponseWriter.Write(b)
}

// reqInfo collects what the handlers learnt about a request for stats and the request log.
type reqInfo struct {
	typ       string
	principal string
	code      string
	fault     string
}

// ServeHTTP serves ARM, the Entra ID endpoints, the managed identity endpoint and the admin API.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	info := &reqInfo{}
	wrec := e.captureWrite(r) // nil unless WithWriteLog (writelog.go)
	defer func() {
		v := recover()
		status := rec.status
		if v != nil {
			status = 0 // connection reset
		}
		e.stats.record(r, status, info, start)
		if wrec != nil {
			wrec.Status, wrec.Principal = status, info.principal
			e.opts.writeLog(*wrec)
		}
		if v != nil {
			panic(v)
		}
	}()
	path := r.URL.Path
	first := path
	if len(first) > 0 && first[0] == '/' {
		first = first[1:]
	}
	if i := strings.IndexByte(first, '/'); i >= 0 {
		first = first[:i]
	}
	switch {
	case isVaultHost(r.Host): // keyvault_keys.go
		e.serveKeyVaultData(rec, r, info)
	case isAppConfigHost(r.Host): // appconfig.go
		e.serveAppConfigData(rec, r, info)
	case strings.EqualFold(first, "subscriptions") || strings.EqualFold(first, "providers"):
		e.serveARM(rec, r, info)
	case isMetadataPath(path): // metadata.go
		info.typ = "metadata"
		e.serveMetadata(rec, r)
	case first == "_admin":
		info.typ = "admin"
		e.serveAdmin(rec, r)
	case path == "/msi/token":
		info.typ = "identity"
		e.serveMSI(rec, r, info)
	case first == "oidc":
		info.typ = "identity"
		e.serveOIDC(rec, r)
	default:
		info.typ = "identity"
		e.serveEntra(rec, r, info)
	}
}
