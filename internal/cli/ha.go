package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"

	"github.com/gitaso/gitaso/api"
	"github.com/gitaso/gitaso/cluster"
	"github.com/gitaso/gitaso/manifest"
	"github.com/gitaso/gitaso/reconcile"
	"github.com/gitaso/gitaso/record"
	"github.com/gitaso/gitaso/source"
	"github.com/gitaso/gitaso/state"
)

// High availability of serve (docs/ha.md): with --leader-elect, replicas
// compete for a coordination.k8s.io Lease. A standby does not open the
// state file; it answers /healthz, /readyz and /metrics itself and forwards
// every other request to the leader. The winner opens the state (its file
// lock is a second fence behind the Lease), resumes the operations a dead
// leader left in flight and applies; a leader that loses its Lease exits at
// once. --shards/--shard split the namespaces between processes, each with
// its own Lease and state file.

// inClusterNamespaceFile holds the pod's namespace (the default namespace
// of the Lease).
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// Headers of forwarded requests: the leader's URL on every answer a standby
// forwarded, and the forwarding standby on the request (a request that
// arrives forwarded is never forwarded again).
const (
	headerLeader    = "X-Gitaso-Leader"
	headerForwarded = "X-Gitaso-Forwarded-By"
)

// haSettings are serve's leader-election and sharding flags.
type haSettings struct {
	leaderElect                               bool
	namespace, id, advertiseURL               string
	leaseDuration, renewDeadline, retryPeriod time.Duration
	shards, shard                             int
}

func (h *haSettings) register(fs *pflag.FlagSet) {
	d := cluster.DefaultLeaderOptions()
	fs.BoolVar(&h.leaderElect, "leader-elect", false, "run as one of several replicas: the holder of a coordination.k8s.io Lease applies, the others are standbys that forward the API to it and take over when it stops (needs --kubeconfig or --in-cluster)")
	fs.StringVar(&h.namespace, "leader-election-namespace", defaultLeaseNamespace(), "namespace of the Lease (in a pod, the default is the pod's own namespace)")
	fs.StringVar(&h.id, "leader-election-id", "gitaso", "name of the Lease; with --shards N > 1 shard K's Lease is <id>-shard-K")
	fs.StringVar(&h.advertiseURL, "advertise-url", "", "URL at which the other replicas reach this process's API while it leads (default http://$POD_IP:<listen port>, else http://<listen address>)")
	fs.DurationVar(&h.leaseDuration, "lease-duration", d.LeaseDuration, "how long a standby waits after the leader's last renewal before it takes the Lease over")
	fs.DurationVar(&h.renewDeadline, "renew-deadline", d.RenewDeadline, "how long the leader tries to renew its Lease before it gives up (and exits)")
	fs.DurationVar(&h.retryPeriod, "retry-period", d.RetryPeriod, "how often candidates try to acquire and the leader renews the Lease")
	fs.IntVar(&h.shards, "shards", 1, "split the namespaces between this many processes: namespace N belongs to shard fnv32a(N) mod --shards (each shard needs its own --state)")
	fs.IntVar(&h.shard, "shard", 0, "the shard this process applies, 0 to --shards minus 1")
}

func defaultLeaseNamespace() string {
	if b, err := os.ReadFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return "default"
}

func (h *haSettings) validate() error {
	if h.shards < 1 || h.shard < 0 || h.shard >= h.shards {
		return fmt.Errorf("--shard %d of --shards %d: want --shards ≥ 1 and 0 ≤ --shard < --shards", h.shard, h.shards)
	}
	if !h.leaderElect {
		return nil
	}
	if h.namespace == "" || h.id == "" {
		return errors.New("--leader-elect needs --leader-election-namespace and --leader-election-id")
	}
	if h.advertiseURL != "" {
		if _, err := cluster.NewIdentity(h.advertiseURL); err != nil {
			return fmt.Errorf("--advertise-url: %w", err)
		}
	}
	if h.leaseDuration <= h.renewDeadline || h.renewDeadline <= h.retryPeriod || h.retryPeriod <= 0 {
		return fmt.Errorf("want --lease-duration > --renew-deadline > --retry-period > 0 (got %s, %s, %s)", h.leaseDuration, h.renewDeadline, h.retryPeriod)
	}
	return nil
}

// leaseName is the Lease of this process's shard.
func (h *haSettings) leaseName() string { return cluster.ShardLeaseName(h.id, h.shard, h.shards) }

// advertise returns the URL other replicas reach this process at, given the
// address it listens on.
func (h *haSettings) advertise(addr net.Addr) string {
	if h.advertiseURL != "" {
		return h.advertiseURL
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String()
	}
	if ip := os.Getenv("POD_IP"); ip != "" {
		return "http://" + net.JoinHostPort(ip, port)
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		}
	}
	return "http://" + net.JoinHostPort(host, port)
}

// filter keeps the objects of this process's shard (the source unchanged
// with a single shard).
func (h *haSettings) filter(src source.Source) source.Source {
	if h.shards < 2 {
		return src
	}
	return shardSource{src: src, shard: h.shard, n: h.shards}
}

// shardSource keeps, of every snapshot, the objects of one shard's
// namespaces. An object without metadata.namespace is in "default" (as
// gitaso plans it); an ignored object without one (a cluster-scoped kind)
// goes to shard 0. The revision is the repository's: every shard applies the
// same commit. A shard whose namespaces hold nothing sees an empty snapshot,
// which the deletion guard holds only when that shard's state manages
// resources (an empty revision of its own namespaces).
type shardSource struct {
	src      source.Source
	shard, n int
}

func (s shardSource) Fetch(ctx context.Context) (*manifest.Snapshot, error) {
	snap, err := s.src.Fetch(ctx)
	if snap == nil {
		return nil, err
	}
	out := *snap
	out.Objects = slices.DeleteFunc(slices.Clone(snap.Objects), func(o manifest.Object) bool {
		return cluster.ShardOf(o.Namespace(), s.n) != s.shard
	})
	out.Ignored = slices.DeleteFunc(slices.Clone(snap.Ignored), func(o manifest.Object) bool {
		ns, _ := o.Metadata()["namespace"].(string)
		if ns == "" {
			return s.shard != 0
		}
		return cluster.ShardOf(ns, s.n) != s.shard
	})
	return &out, err
}

// checkState refuses a state file that holds resources of another shard's
// namespaces: this shard would plan their deletion, since its snapshots no
// longer declare them. That happens when --shards changed or two shards
// were given one --state.
func (h *haSettings) checkState(db *state.DB) error {
	if h.shards < 2 || db == nil {
		return nil
	}
	rs, err := db.Resources(record.Filter{})
	if err != nil {
		return fmt.Errorf("shard %d: read state: %w", h.shard, err)
	}
	foreign := map[string]bool{}
	for _, r := range rs {
		if cluster.ShardOf(r.Namespace, h.shards) != h.shard {
			foreign[r.Namespace] = true
		}
	}
	if len(foreign) == 0 {
		return nil
	}
	nss := make([]string, 0, len(foreign))
	for ns := range foreign {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	return fmt.Errorf("shard %d of %d: the state file holds resources of namespaces that belong to other shards (%s); "+
		"this shard would delete them: give every shard its own --state, and after changing --shards start the shards with new state files (they adopt what exists in Azure)",
		h.shard, h.shards, strings.Join(nss, ", "))
}

// startReconciler builds the reconciler over the open state and the API
// handler, and starts watching the cluster's inputs.
func (s *settings) startReconciler(ctx context.Context, e *env, apiOpts api.Options) (*reconcile.Reconciler, http.Handler, error) {
	r := reconcile.New(e.src, e.db, e.clients, e.cfg, e.log)
	apiOpts.Sync, apiOpts.Approve, apiOpts.Ready, apiOpts.Logger = r.Sync, r.ApproveDeletions, r.Ready, e.log
	apiOpts.ApprovePlan = r.ApprovePlan
	apiOpts.Audit = s.access.auditor(ctx, e)
	apiOpts.Status = r.Status
	apiOpts.Metrics = e.metrics
	autoplanNow, err := s.startAutoplan(ctx, e) // autoplan.go: the leader's only
	if err != nil {
		return nil, nil, err
	}
	approvalsNow := s.startApprovals(ctx, e, r, apiOpts.Audit) // approvals.go
	if apiOpts.WebhookSecret != "" {
		apiOpts.Webhook = r.Poll
		if autoplanNow != nil {
			// A pull-request event plans its pull request at once, and
			// a comment may approve a held plan.
			apiOpts.Webhook = func(ctx context.Context) error {
				autoplanNow()
				if approvalsNow != nil {
					approvalsNow()
				}
				return r.Poll(ctx)
			}
		}
	}
	if err := s.watchInputs(ctx, r); err != nil { // cluster.go
		return nil, nil, err
	}
	return r, api.New(e.db, apiOpts), nil
}

// serveHA is serve with --leader-elect: it listens at once as a standby,
// campaigns for the Lease and, once it holds it, opens the state and
// applies (lead). It returns when ctx ends (after the loop stopped and the
// state was closed, it releases the Lease), or with an error when the
// leadership is lost or the leader cannot work, so that the process exits
// and its state file lock is released.
func (s *settings) serveHA(ctx context.Context, stdout io.Writer, e *env, h *haSettings, apiOpts api.Options, listen string) error {
	cl, err := s.kube.connect()
	if err != nil {
		return err
	}
	if cl == nil {
		return errors.New("--leader-elect needs the cluster that holds the Lease: set --kubeconfig or --in-cluster")
	}
	klog.SetSlogLogger(e.log.With("component", "leaderelection"))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	adv := h.advertise(ln.Addr())
	identity, err := cluster.NewIdentity(adv)
	if err != nil {
		_ = ln.Close()
		return fmt.Errorf("--advertise-url: %w", err)
	}
	lo := cluster.LeaderOptions{Namespace: h.namespace, Name: h.leaseName(), Identity: identity,
		LeaseDuration: h.leaseDuration, RenewDeadline: h.renewDeadline, RetryPeriod: h.retryPeriod}
	sb := newStandby(cl, lo, adv, e.log)
	sw := &handlerSwitch{}
	sw.set(sb)
	so := api.DefaultServerOptions()
	so.Logger = e.log
	srv := api.NewServer(sw, so)
	e.log.Info("serving as a standby until this process holds the lease", "address", "http://"+ln.Addr().String(),
		"lease", lo.Namespace+"/"+lo.Name, "identity", identity, "shard", h.shard, "shards", h.shards)
	fmt.Fprintf(stdout, "gitaso serving on http://%s (standby until it holds lease %s/%s)\n", ln.Addr(), lo.Namespace, lo.Name)

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The campaign has a context of its own, ended only after the loop
	// stopped and the state was closed: the Lease is released (a standby
	// takes over within a retry period) when the state file is free.
	electCtx, stopElect := context.WithCancel(context.Background())
	defer stopElect()
	var leading atomic.Bool
	leadErr := make(chan error, 1)
	electErr := make(chan error, 1)
	go func() {
		electErr <- cl.Elect(electCtx, lo, func(lctx context.Context) {
			leading.Store(true)
			lctx, cancel := context.WithCancel(lctx)
			defer cancel()
			stop := context.AfterFunc(ctx, cancel)
			defer stop()
			leadErr <- s.lead(lctx, e, h, lo, apiOpts, sw)
		}, func() {
			e.log.Error("leadership lost: exiting at once so that the state file is released; the process restarts as a standby",
				"lease", lo.Namespace+"/"+lo.Name)
		})
	}()
	shutdown := func() {
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}
	select {
	case <-ctx.Done():
		shutdown()
		if leading.Load() {
			<-leadErr // the loop stopped and the state is closed
		}
		stopElect()
		return <-electErr
	case err := <-errc:
		stopElect()
		return fmt.Errorf("serve: %w", err)
	case err := <-electErr:
		if err == nil {
			err = errors.New("leader election ended")
		}
		return &ExitError{Code: 1, Err: err}
	case err := <-leadErr:
		if err == nil && ctx.Err() == nil {
			// The loop ends with its context: the leadership ended.
			if err = <-electErr; err == nil {
				err = errors.New("leader election ended")
			}
			return &ExitError{Code: 1, Err: err}
		}
		if err == nil { // stopped by ctx: as above
			shutdown()
			stopElect()
			return <-electErr
		}
		stopElect() // give the Lease up for another replica
		select {
		case <-electErr:
		case <-time.After(h.renewDeadline):
		}
		return &ExitError{Code: 1, Err: err}
	}
}

// lead is what the Lease's holder does: open the state (waiting up to a
// lease duration for a predecessor that has not quite died to release the
// file), resume and apply, and serve the real API. It returns when ctx ends
// (leadership or the process ends), with the state closed.
func (s *settings) lead(ctx context.Context, e *env, h *haSettings, lo cluster.LeaderOptions, apiOpts api.Options, sw *handlerSwitch) error {
	start := time.Now()
	e.log.Info("elected: opening the state", "lease", lo.Namespace+"/"+lo.Name, "state", s.stateFile)
	if err := s.openState(e, state.WithLockTimeout(lo.LeaseDuration)); err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	defer e.close()
	if err := h.checkState(e.db); err != nil {
		return err
	}
	r, handler, err := s.startReconciler(ctx, e, apiOpts)
	if err != nil {
		return err
	}
	e.metrics.SetLeader(lo.Namespace + "/" + lo.Name)
	sw.set(handler)
	e.log.Info("leading: state open, resuming operations in flight and applying", "lease", lo.Namespace+"/"+lo.Name, "after", time.Since(start).Round(time.Millisecond).String())
	return r.Loop(ctx)
}

// handlerSwitch serves the standby's handler until the leader's replaces it.
type handlerSwitch struct{ h atomic.Pointer[http.Handler] }

func (s *handlerSwitch) set(h http.Handler) { s.h.Store(&h) }

func (s *handlerSwitch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	(*s.h.Load()).ServeHTTP(w, r)
}

// standby answers probes and metrics itself and forwards every other
// request to the leader named by the Lease.
type standby struct {
	cl   *cluster.Cluster
	lo   cluster.LeaderOptions
	self string // this process's advertise URL
	log  *slog.Logger
	rt   http.RoundTripper

	mu      sync.Mutex
	leader  string
	lookErr error
	looked  time.Time
}

func newStandby(cl *cluster.Cluster, lo cluster.LeaderOptions, self string, log *slog.Logger) *standby {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil // replicas reach each other directly, never through HTTP(S)_PROXY
	return &standby{cl: cl, lo: lo, self: self, log: log, rt: t}
}

// leaderURL reads the Lease's holder, at most once per retry period.
func (s *standby) leaderURL(ctx context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.looked.IsZero() && time.Since(s.looked) < s.lo.RetryPeriod {
		return s.leader, s.lookErr
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s.leader, s.lookErr = s.cl.LeaderURL(ctx, s.lo.Namespace, s.lo.Name)
	s.looked = time.Now()
	return s.leader, s.lookErr
}

// forget makes the next request read the Lease again (its holder did not
// answer).
func (s *standby) forget() {
	s.mu.Lock()
	s.looked = time.Time{}
	s.mu.Unlock()
}

func (s *standby) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		writePlain(w, http.StatusOK, "ok\n")
		return
	case "/readyz":
		// A standby is ready: it serves the API by forwarding it.
		leader, err := s.leaderURL(r.Context())
		if err != nil {
			writePlain(w, http.StatusOK, "standby, no leader yet: "+err.Error()+"\n")
			return
		}
		writePlain(w, http.StatusOK, "standby, leader "+leader+"\n")
		return
	case "/metrics":
		writePlain(w, http.StatusOK, leaderMetric(s.lo, 0))
		return
	}
	if by := r.Header.Get(headerForwarded); by != "" {
		s.unavailable(w, fmt.Sprintf("request forwarded by %s reached a standby: the leader changed, retry", by))
		return
	}
	leader, err := s.leaderURL(r.Context())
	switch {
	case err != nil:
		s.unavailable(w, fmt.Sprintf("this replica is a standby and no leader holds lease %s/%s yet: %v; retry shortly", s.lo.Namespace, s.lo.Name, err))
		return
	case leader == s.self:
		s.forget()
		s.unavailable(w, "this replica was just elected and is opening its state; retry shortly")
		return
	}
	target, err := url.Parse(leader)
	if err != nil {
		s.unavailable(w, fmt.Sprintf("leader URL %q: %v", leader, err))
		return
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host // the leader checks the Host the client sent (DNS rebinding)
			pr.SetXForwarded()
			pr.Out.Header.Set(headerForwarded, s.self)
		},
		Transport: s.rt,
		ModifyResponse: func(resp *http.Response) error {
			resp.Header.Set(headerLeader, leader)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			s.forget()
			s.log.Warn("forward to the leader", "leader", leader, "path", r.URL.Path, "error", err)
			w.Header().Set(headerLeader, leader)
			s.unavailable(w, fmt.Sprintf("this replica is a standby and the leader %s does not answer (%v); a standby takes over within %s of its last renewal", leader, err, s.lo.LeaseDuration))
		},
	}
	rp.ServeHTTP(w, r)
}

func (s *standby) unavailable(w http.ResponseWriter, msg string) {
	b, _ := json.Marshal(api.ErrorBody{Error: api.ErrorDetail{Code: api.CodeUnavailable, Message: msg}})
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(s.lo.RetryPeriod.Seconds()))))
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(append(b, '\n'))
}

func writePlain(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// leaderMetric is the gitaso_leader gauge in Prometheus' text format.
func leaderMetric(lo cluster.LeaderOptions, v int) string {
	return fmt.Sprintf("# HELP gitaso_leader 1 while this process holds its Lease and applies, 0 on a standby.\n# TYPE gitaso_leader gauge\ngitaso_leader{lease=%q} %d\n",
		lo.Namespace+"/"+lo.Name, v)
}
